// TypeBox request validation: schemas are compiled once; the first error becomes a 422
// invalid_parameter whose `param` names the field at fault.
import { Compile } from 'typebox/compile';
import type { TSchema, Static } from 'typebox';
import { invalid } from '../core/errors.js';

interface TbError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

function toApiError(errors: TbError[]) {
  const req = errors.find((e) => e.keyword === 'required');
  if (req) {
    const field = (req.params.requiredProperties as string[])[0];
    return invalid(pathOf(req.instancePath, field), `${pathOf(req.instancePath, field)} is required.`);
  }
  const extra = errors.find((e) => e.keyword === 'additionalProperties');
  if (extra) {
    const field = (extra.params.additionalProperties as string[])[0];
    return invalid(pathOf(extra.instancePath, field), `Unknown field ${pathOf(extra.instancePath, field)}.`);
  }
  // Prefer the deepest, most specific error (anyOf summaries come last).
  const e =
    [...errors].sort((a, b) => b.instancePath.length - a.instancePath.length).find((x) => x.keyword !== 'anyOf') ??
    errors[0];
  const p = pathOf(e.instancePath);
  return invalid(p.split(/[.[]/)[0] || p, `${p || 'body'} ${e.message}.`);
}

function pathOf(instancePath: string, child?: string): string {
  const parts = instancePath.split('/').filter(Boolean);
  if (child !== undefined) parts.push(child);
  return parts.map((x, i) => (/^\d+$/.test(x) ? `[${x}]` : i === 0 ? x : `.${x}`)).join('');
}

export function validator<T extends TSchema>(schema: T) {
  const c = Compile(schema);
  return (value: unknown): Static<T> => {
    if (c.Check(value)) return value as Static<T>;
    throw toApiError([...c.Errors(value)] as TbError[]);
  };
}

/** Deepest `[`/`{` nesting allowed in a JSON body; deeper bodies are refused before JSON.parse builds them. */
export const MAX_JSON_DEPTH = 64;

/** True when `text` nests arrays/objects deeper than `max`: one linear scan, brackets inside strings ignored. */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
