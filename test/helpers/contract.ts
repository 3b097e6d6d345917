/** The contract's schemas, to check an answer's shape in a test (the Dredd run checks every operation's examples). */
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

let ajv: Ajv2020 | null = null;

/** What is wrong with `value` as the contract's `components/schemas/<name>`, or null when nothing is. */
export function schemaProblems(name: string, value: unknown): string | null {
  if (!ajv) {
    const contract = parse(fs.readFileSync(path.join(__dirname, '..', '..', 'openapi', 'openapi.yaml'), 'utf8'));
    ajv = addFormats(new Ajv2020({ strict: false, discriminator: true, allErrors: true }));
    ajv.addSchema({ $id: 'contract', components: contract.components });
  }
  const validate = ajv.getSchema(`contract#/components/schemas/${name}`)!;
  return validate(value) ? null : validate.errors!.map((e) => `${e.instancePath} ${e.message}`).join('; ');
}
