/**
 * The shape of the house, checked on every run: the import graph of src/ has no cycle, no module imports a layer
 * above its own, the gateway knows nothing of accounts, billing or HTTP, no function is longer than 60 lines, no
 * type declares a member twice, no TypeScript file at the root goes unchecked, and what the contract lists
 * (operations, scopes, model kinds, wires) is listed nowhere else by hand.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { GENERATED } from '../../scripts/contract';
import { ENDPOINTS, MODEL_KINDS, SCOPES, WIRES } from '../../src/contract';

const SRC = path.join(__dirname, '..', '..', 'src');

/** Lower layers first; a module may import its own layer and the ones below. */
const LAYERS: [number, RegExp][] = [
  [0, /^(errors|money|usage|log|limiter|redis|metrics|contract|secrets|digest|tracing|heap|startup)\.ts$/],
  [1, /^config\//],
  [2, /^db\//],
  [3, /^(accounts|gateway)\//],
  [4, /^billing\//],
  [5, /^services\//],
  [6, /^handlers\//],
  [7, /^http\//],
  [8, /^(main|cli)\.ts$/],
];

/** Modules of one layer that must not know each other. */
const APART: [RegExp, RegExp][] = [
  [/^gateway\//, /^accounts\//],
  [/^accounts\//, /^gateway\//],
];

function files(dir: string, out: string[] = []): string[] {
  for (const f of fs.readdirSync(dir)) {
    const p = path.join(dir, f);
    if (fs.statSync(p).isDirectory()) files(p, out);
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

const rel = (p: string) => path.relative(SRC, p).split(path.sep).join('/');
const all = files(SRC).map(rel);

function resolve(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  for (const c of [`${base}.ts`, `${base}/index.ts`]) if (all.includes(c)) return c;
  return null; // outside src/ (generated/)
}

const graph = new Map(
  all.map((f) => {
    const text = fs.readFileSync(path.join(SRC, f), 'utf8');
    const specs = [...text.matchAll(/(?:from|import|require)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]);
    return [f, [...new Set(specs.map((s) => resolve(f, s)).filter((x): x is string => !!x))]];
  }),
);

const layer = (f: string) => {
  const found = LAYERS.find(([, re]) => re.test(f));
  if (!found) throw new Error(`${f} is in no layer: add it to LAYERS`);
  return found[0];
};

test('every module of src/ belongs to a layer (and the imports are read)', () => {
  expect(all.filter((f) => !LAYERS.some(([, re]) => re.test(f)))).toEqual([]);
  expect(graph.get('http/api.ts')).toEqual(
    expect.arrayContaining(['handlers/index.ts', 'gateway/bound.ts', 'errors.ts']),
  );
});

test('no module imports a layer above its own, and the gateway and accounts do not know each other', () => {
  const climbing: string[] = [];
  for (const [f, deps] of graph) {
    for (const d of deps) {
      if (layer(d) > layer(f)) climbing.push(`${f} → ${d}`);
      if (APART.some(([a, b]) => a.test(f) && b.test(d))) climbing.push(`${f} → ${d}`);
    }
  }
  expect(climbing).toEqual([]);
});

test('the import graph has no cycle', () => {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const d of graph.get(f) ?? []) {
      if (state.get(d) === 'open') cycles.push([...stack.slice(stack.indexOf(d)), d]);
      else if (!state.has(d)) visit(d);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of all) if (!state.has(f)) visit(f);
  expect(cycles.map((c) => c.join(' → '))).toEqual([]);
});

test('no function is longer than 60 lines', () => {
  const long: string[] = [];
  for (const f of all) {
    const sf = ts.createSourceFile(f, fs.readFileSync(path.join(SRC, f), 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node) => {
      if (ts.isFunctionLike(n) && 'body' in n && n.body) {
        const lines =
          sf.getLineAndCharacterOfPosition(n.end).line - sf.getLineAndCharacterOfPosition(n.getStart()).line + 1;
        if (lines > 60) long.push(`${f}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1} (${lines} lines)`);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  expect(long).toEqual([]);
});

test('no interface or object type declares a member twice', () => {
  const twice: string[] = [];
  for (const f of all) {
    const sf = ts.createSourceFile(f, fs.readFileSync(path.join(SRC, f), 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node) => {
      if (ts.isInterfaceDeclaration(n) || ts.isTypeLiteralNode(n)) {
        // Overloads of a method repeat its name on purpose: only properties and optional members count.
        const counted = n.members.filter((m) => m.name && (m.questionToken || ts.isPropertySignature(m)));
        const names = counted.map((m) => m.name!.getText(sf));
        const line = sf.getLineAndCharacterOfPosition(n.getStart()).line + 1;
        for (const name of new Set(names.filter((x, i) => names.indexOf(x) !== i))) twice.push(`${f}:${line} ${name}`);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  expect(twice).toEqual([]);
});

test('every TypeScript file at the root is type-checked (tsconfig.json includes it)', () => {
  const root = path.join(SRC, '..');
  const { include } = ts.readConfigFile(path.join(root, 'tsconfig.json'), ts.sys.readFile).config as {
    include: string[];
  };
  expect(fs.readdirSync(root).filter((f) => f.endsWith('.ts') && !include.includes(f))).toEqual([]);
});

/**
 * What the contract lists (operationIds, key scopes, model kinds, wires) is written once, in the contract, and read
 * from what `npm run generate` derives from it (src/contract.ts and the other generated tables): a list of them
 * written out by hand anywhere else in src/ or the web apps would be one more place to edit for a new endpoint, and
 * could disagree. A list is an array, a union type, an enum, a switch, an interface's or object type's members, an
 * object literal's keys (but a provider's `operations`: its adapters, by the wires it serves) or its string values,
 * made only of the names of one of them (two at least). The migrations are left out: they record what was, and
 * must not follow the contract.
 */
describe('no list of what the contract lists is kept by hand', () => {
  const ROOT = path.join(SRC, '..');
  const GENERATED_FILES = new Set<string>(GENERATED);
  const NAMES = {
    operationId: new Set<string>(Object.keys(ENDPOINTS)),
    scope: new Set<string>(SCOPES),
    kind: new Set<string>(MODEL_KINDS),
    wire: new Set<string>(Object.keys(WIRES)),
  };
  type Names = keyof typeof NAMES;
  const ALL: Names[] = ['operationId', 'scope', 'kind', 'wire'];

  function sources(dir: string, out: string[] = []): string[] {
    for (const f of fs.readdirSync(path.join(ROOT, dir))) {
      const p = `${dir}/${f}`;
      if (fs.statSync(path.join(ROOT, p)).isDirectory()) sources(p, out);
      else if (/\.tsx?$/.test(p) && !GENERATED_FILES.has(p) && !p.startsWith('src/db/migrations/')) out.push(p);
    }
    return out;
  }

  const text = (n: ts.Node | undefined) =>
    n && (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) ? n.text : '';
  const key = (n: ts.Node) => {
    const name = (n as { name?: ts.Node }).name;
    return name && (ts.isIdentifier(name) || ts.isStringLiteral(name)) ? name.text : '';
  };

  /** The lists in a node, with what they may be lists of. */
  function lists(n: ts.Node): [string[], Names[]][] {
    if (ts.isArrayLiteralExpression(n)) return [[n.elements.map(text), ALL]];
    if (ts.isUnionTypeNode(n)) return [[n.types.map((t) => (ts.isLiteralTypeNode(t) ? text(t.literal) : '')), ALL]];
    if (ts.isEnumDeclaration(n) || ts.isInterfaceDeclaration(n) || ts.isTypeLiteralNode(n)) {
      return [[n.members.map(key), ALL]];
    }
    if (ts.isSwitchStatement(n))
      return [[n.caseBlock.clauses.map((c) => (ts.isCaseClause(c) ? text(c.expression) : '')), ALL]];
    if (!ts.isObjectLiteralExpression(n)) return [];
    const values = n.properties.map((p) => (ts.isPropertyAssignment(p) ? text(p.initializer) : ''));
    // A provider's adapters are keyed by the wires it serves: that list is the provider's own.
    const adapters = ts.isPropertyAssignment(n.parent) && key(n.parent) === 'operations';
    return [
      [n.properties.map(key), adapters ? [] : ALL],
      [values, ALL],
    ];
  }

  function handKept(file: string, source = fs.readFileSync(path.join(ROOT, file), 'utf8')): string[] {
    const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
    const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, kind);
    const found: string[] = [];
    const visit = (n: ts.Node) => {
      for (const [names, of] of lists(n)) {
        const list = of.find((s) => new Set(names).size >= 2 && names.every((x) => NAMES[s].has(x)));
        const line = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
        if (list) found.push(`${file}:${line} lists ${list}s: ${names.join(', ')}`);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
    return found;
  }

  test('in src/, console/src and console/admin/src', () => {
    const files = [...sources('src'), ...sources('console/src'), ...sources('console/admin/src')];
    expect(files.flatMap((f) => handKept(f))).toEqual([]);
  });

  test('the check finds such lists', () => {
    const [a, b] = SCOPES;
    const [id1, id2] = Object.keys(ENDPOINTS);
    const [k1, k2] = MODEL_KINDS;
    const probe = [
      `const s = ['${a}', '${b}'];`,
      `type T = '${a}' | '${b}';`,
      `const h = { ${id1}, ${id2}: 1 };`,
      `const v = { x: '${k1}', y: '${k2}' };`,
      `const one = ['${a}', '${a}'];`,
    ];
    expect(handKept('probe.tsx', probe.join('\n'))).toEqual([
      `probe.tsx:1 lists scopes: ${a}, ${b}`,
      `probe.tsx:2 lists scopes: ${a}, ${b}`,
      `probe.tsx:3 lists operationIds: ${id1}, ${id2}`,
      `probe.tsx:4 lists kinds: ${k1}, ${k2}`,
    ]);
  });
});
