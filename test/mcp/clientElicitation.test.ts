/**
 * The checks of an MCP server's question and of a person's answer (adapters/mcp/elicitation.ts):
 * what form a2a can put to a person, and how a typed answer becomes content that fits it. Bad
 * input of both sides gets a message naming the field and what is allowed.
 */
import { describe, expect, it } from 'vitest';
import { contentProblem, defaultsOf, describeSchema, parseAnswer, schemaProblem, shortenRefusal } from '../../adapters/mcp/elicitation.js';
import { parseReply } from '../../adapters/humanPrompt.js';
import type { HumanItem } from '../../machines/protocol/index.js';

const CITY = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 2 },
    nights: { type: 'integer', minimum: 1, maximum: 30, default: 2 },
    room: { type: 'string', enum: ['single', 'double'], default: 'double' },
    extras: { type: 'array', items: { type: 'string', enum: ['breakfast', 'parking'] } },
    pets: { type: 'boolean' },
  },
  required: ['city'],
};

describe('an MCP server\'s question', () => {
  it.each([
    [{ type: 'object', properties: { address: { type: 'object', properties: {} } } }, /properties\.address\.type must be string, number, integer or boolean .* not "object"/],
    [{ type: 'array' }, /requestedSchema\.type must be "object"/],
    [{ type: 'object', properties: { n: { type: 'string', enum: [1, 2] } } }, /properties\.n: an enum must list strings/],
    [{ type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } } } }, /properties\.tags: an array must be a multi-select of string options/],
    [{ type: 'object', properties: { a: { type: 'string' } }, required: ['b'] }, /required must list names of its properties/],
    ['a string', /requestedSchema is not an object/],
  ])('is refused when its form is not one MCP allows: %j', (schema, message) => {
    expect(schemaProblem(schema)).toMatch(message);
  });

  it('is put to a person field by field, and its defaults are what auto_approve accepts', () => {
    expect(schemaProblem(CITY)).toBeNull();
    expect(describeSchema(CITY)).toBe('{ "city": string (required); "nights": integer (optional, default 2); "room": "single"|"double" (optional, default "double"); "extras": list of breakfast|parking (optional); "pets": boolean (optional) }');
    expect(defaultsOf(CITY)).toBeNull();
    expect(defaultsOf({ type: 'object', properties: { ok: { type: 'boolean', default: true } } })).toEqual({ ok: true });
  });

  it('shortens the SDK\'s refusal of a form to the field it is about', () => {
    const dump = `Invalid elicitation request: [{"code":"invalid_union","errors":[[{"path": ["type"]}]],"path": [\n "requestedSchema",\n "properties",\n "address"\n]}]`;
    expect(shortenRefusal(`book failed: ${dump}`)).toBe('book failed: the MCP server asked a question a2a could not put to anyone: its form is not one MCP allows (at requestedSchema.properties.address); nobody was asked');
    expect(shortenRefusal('something else')).toBe('something else');
  });
});

describe('a person\'s answer', () => {
  it('is JSON, or the value of the one required field; the fields left out get the defaults', () => {
    expect(parseAnswer('Lisbon', CITY)).toEqual({ content: { city: 'Lisbon', nights: 2, room: 'double' } });
    expect(parseAnswer('{"city":"Porto","nights":3,"extras":["parking"],"pets":false}', CITY)).toEqual({ content: { city: 'Porto', nights: 3, room: 'double', extras: ['parking'], pets: false } });
    expect(parseAnswer('yes', { type: 'object', properties: { ok: { type: 'boolean' } } })).toEqual({ content: { ok: true } });
    expect(parseAnswer('4', { type: 'object', properties: { n: { type: 'number' } } })).toEqual({ content: { n: 4 } });
    expect(parseAnswer('', { type: 'object', properties: { ok: { type: 'boolean', default: false } } })).toEqual({ content: { ok: false } });
  });

  it.each([
    ['{"city": 3}', /"city" must be a string, not 3/],
    ['{"city": "X"}', /"city" must have at least 2 characters/],
    ['{"city": "Porto", "nights": 0}', /"nights" must be at least 1/],
    ['{"city": "Porto", "nights": 2.5}', /"nights" must be a whole number/],
    ['{"city": "Porto", "room": "suite"}', /"room" must be one of "single", "double", not "suite"/],
    ['{"city": "Porto", "extras": ["spa"]}', /"extras" must be a list of "breakfast", "parking"/],
    ['{"city": "Porto", "pets": "maybe"}', /"pets" must be true or false/],
    ['{"town": "Porto"}', /"town" is not a field of this form \(fields: city, nights, room, extras, pets\)/],
    ['{"nights": 3}', /"city" is required/],
    ['{"city": ', /the answer is not valid JSON/],
    ['["Porto"]', /the answer is not a JSON object/],
    ['', /the answer is empty and the form has required fields without a default/],
  ])('that does not fit the form says why: %s', (text, message) => {
    const parsed = parseAnswer(text, CITY);
    expect('error' in parsed && parsed.error).toMatch(message);
  });

  it('as a single value is refused where the form has several required fields', () => {
    const two = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a', 'b'] };
    expect(parseAnswer('x', two)).toEqual({ error: 'give the answer as a JSON object: { "a": string (required); "b": string (required) }' });
    expect(contentProblem({ a: 'x', b: 'y' }, two)).toBeNull();
  });
});

describe('a person\'s answer at the terminal', () => {
  const item = { kind: 'permission', request: { action: 'mcp_elicitation', elicitation: { server: 's', tool: 't', message: 'Go?', requestedSchema: {} } } } as unknown as HumanItem;

  it('is the content as typed ("no" may be a value), or "decline" with a reason', () => {
    expect(parseReply(item, ' {"ok": false} ', 'ann')).toEqual({ approved: true, text: '{"ok": false}', by: 'ann' });
    expect(parseReply(item, 'no', 'ann')).toEqual({ approved: true, text: 'no', by: 'ann' });
    expect(parseReply(item, 'decline not now', 'ann')).toEqual({ approved: false, reason: 'not now', by: 'ann' });
    expect(parseReply(item, '   ', 'ann')).toBeNull();
  });
});
