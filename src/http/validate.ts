// TypeBox request validation: schemas are compiled once; the first error becomes a 422
// invalid_parameter whose `param` names the field at fault.
import { Compile } from 'typebox/compile';
import type { TSchema, Static } from 'typebox';
import { invalid } from '../core/errors.js';

interface TbError { keyword: string; instancePath: string; params: Record<string, unknown>; message: string }

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
  const e = [...errors].sort((a, b) => b.instancePath.length - a.instancePath.length).find((x) => x.keyword !== 'anyOf') ?? errors[0];
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
