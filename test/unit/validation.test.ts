/** Contract validation errors (Ajv's) become one OpenAI-style 400 that names the offending parameter. */
import Ajv2020 from 'ajv/dist/2020';
import type { ErrorObject } from 'ajv';
import { ApiError } from '../../src/errors';
import { paramName, validationError } from '../../src/http/validation';

const err = (
  keyword: string,
  instancePath: string,
  params: Record<string, unknown> = {},
  message?: string,
): ErrorObject => ({
  keyword,
  instancePath,
  schemaPath: `#/${keyword}`,
  params,
  message,
});

/** The client's view of the error: status and the OpenAI error object. */
const body = (e: ApiError) => ({ status: e.status, ...e.toBody().error });

describe('paramName', () => {
  test.each([
    ['/requestBody/messages/0/role', 'messages[0].role'],
    ['/requestBody/model', 'model'],
    ['/requestBody/messages/12/content/3/image_url/url', 'messages[12].content[3].image_url.url'],
    ['/requestBody/input/0/1', 'input[0][1]'],
    ['/query/limit', 'limit'],
    ['/params/model', 'model'],
    ['/requestBody/logit_bias/a~1b~0c', 'logit_bias.a/b~c'],
    ['/temperature', 'temperature'],
  ])('%s → %s', (path, name) => {
    expect(paramName(path)).toBe(name);
  });

  test('the request body itself has no parameter name', () => {
    expect(paramName('/requestBody')).toBeNull();
    expect(paramName('')).toBeNull();
  });
});

describe('validationError', () => {
  test('a missing required property names the full path of the missing parameter', () => {
    expect(body(validationError([err('required', '/requestBody', { missingProperty: 'model' })]))).toEqual({
      status: 400,
      type: 'invalid_request_error',
      message: "Missing required parameter: 'model'.",
      param: 'model',
      code: 'missing_required_parameter',
    });
    const nested = validationError([err('required', '/requestBody/messages/2', { missingProperty: 'role' })]);
    expect(nested.message).toBe("Missing required parameter: 'messages[2].role'.");
    expect(nested.param).toBe('messages[2].role');
  });

  test('a wrong type names the parameter and the type', () => {
    expect(
      body(validationError([err('type', '/requestBody/temperature', { type: 'number' }, 'must be number')])),
    ).toEqual({
      status: 400,
      type: 'invalid_request_error',
      message: "Invalid value for 'temperature': must be of type number",
      param: 'temperature',
      code: 'invalid_type',
    });
  });

  test('a value outside an enum lists the allowed values', () => {
    const e = validationError([
      err('enum', '/requestBody/messages/1/role', { allowedValues: ['system', 'user', 'assistant'] }),
    ]);
    expect(body(e)).toMatchObject({
      message: `Invalid value for 'messages[1].role': must be one of "system", "user", "assistant"`,
      param: 'messages[1].role',
      code: 'invalid_value',
    });
  });

  test('const and range errors', () => {
    expect(validationError([err('const', '/requestBody/messages/0/role', { allowedValue: 'tool' })]).message).toBe(
      `Invalid value for 'messages[0].role': must be "tool"`,
    );
    expect(validationError([err('maximum', '/requestBody/temperature', { limit: 2 }, 'must be <= 2')]).message).toBe(
      "Invalid value for 'temperature': must be <= 2",
    );
  });

  test('an unknown property is an unknown_parameter', () => {
    expect(
      body(
        validationError([
          err('additionalProperties', '/requestBody/stream_options', { additionalProperty: 'include' }),
        ]),
      ),
    ).toMatchObject({
      status: 400,
      message: 'Unrecognized request argument supplied: include',
      param: 'stream_options.include',
      code: 'unknown_parameter',
    });
  });

  test('a failed anyOf of types reports the union at its own place, not the first branch', () => {
    const e = validationError([
      err('type', '/requestBody/stop', { type: 'string' }, 'must be string'),
      err('type', '/requestBody/stop', { type: 'array' }, 'must be array'),
      err('type', '/requestBody/stop', { type: 'null' }, 'must be null'),
      err('anyOf', '/requestBody/stop', {}, 'must match a schema in anyOf'),
    ]);
    expect(body(e)).toMatchObject({
      message: "Invalid value for 'stop': must be of type string or array or null",
      param: 'stop',
      code: 'invalid_type',
    });
  });

  test('an anyOf whose branches already list several types names each type once', () => {
    const e = validationError([
      err('type', '/requestBody/input', { type: ['string', 'null'] }),
      err('type', '/requestBody/input', { type: 'array' }),
      err('type', '/requestBody/input', { type: 'string' }),
      err('oneOf', '/requestBody/input', { passingSchemas: null }),
    ]);
    expect(e.message).toBe("Invalid value for 'input': must be of type string or null or array");
  });

  test('when a branch got further than its type, that deeper error is reported', () => {
    const e = validationError([
      err('required', '/requestBody/audio', { missingProperty: 'id' }),
      err('type', '/requestBody/audio', { type: 'null' }),
      err('anyOf', '/requestBody/audio'),
    ]);
    expect(e.message).toBe("Missing required parameter: 'audio.id'.");
  });

  test('an error on the body itself does not invent a parameter', () => {
    expect(body(validationError([err('type', '/requestBody', { type: 'object' })]))).toMatchObject({
      message: 'The request body must be of type object',
      param: null,
    });
  });

  test('no errors at all still gives a 400', () => {
    expect(body(validationError([]))).toMatchObject({ status: 400, message: 'The request is invalid', param: null });
    expect(validationError(undefined).status).toBe(400);
    expect(validationError(null).status).toBe(400);
  });

  test('with a real Ajv error list', () => {
    const validate = new Ajv2020({ strict: false, allErrors: false }).compile({
      type: 'object',
      required: ['model', 'messages'],
      properties: {
        model: { type: 'string' },
        messages: {
          type: 'array',
          items: { type: 'object', required: ['role'], properties: { role: { enum: ['user', 'system'] } } },
        },
        stream_options: {
          anyOf: [{ type: 'object', properties: { include_usage: { type: 'boolean' } } }, { type: 'null' }],
        },
      },
    });
    const check = (v: unknown) => {
      expect(validate(v)).toBe(false);
      return body(validationError(validate.errors));
    };
    expect(check({ messages: [] })).toMatchObject({ param: 'model', code: 'missing_required_parameter' });
    expect(check({ model: 'm', messages: [{ role: 'user' }, {}] })).toMatchObject({
      param: 'messages[1].role',
      code: 'missing_required_parameter',
    });
    expect(check({ model: 'm', messages: [{ role: 'bot' }] })).toMatchObject({
      message: `Invalid value for 'messages[0].role': must be one of "user", "system"`,
    });
    expect(check({ model: 'm', messages: [], stream_options: 5 })).toMatchObject({
      message: "Invalid value for 'stream_options': must be of type object or null",
      code: 'invalid_type',
    });
    expect(check({ model: 'm', messages: [], stream_options: { include_usage: 'yes' } })).toMatchObject({
      message: "Invalid value for 'stream_options.include_usage': must be of type boolean",
      code: 'invalid_type',
    });
  });
});
