// Sending domains: add (generate the DKIM key, return the DNS records), check, list, delete.
// Placeholder: the domains feature implements these.
import { ApiError } from '../core/errors.js';
import type { Ctx } from './context.js';

const notYet = () => new ApiError('api_error', 'not_implemented', 'Domains are not implemented yet.', undefined, 501);

export function addDomain(_ctx: Ctx, _teamId: string, _name: string): Record<string, unknown> { throw notYet(); }
export async function verifyDomainByName(_ctx: Ctx, _name: string): Promise<Record<string, unknown>> { throw notYet(); }
