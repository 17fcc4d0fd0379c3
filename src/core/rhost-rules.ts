// Provider error codes as data (Sisimai Lhost::Exchange2007 NDR table and Rhost/* tables, BSD-2-Clause):
// a code or phrase that names its provider's meaning decides the reason. Pure data, no I/O.
import type { BounceReason } from './bounce-reasons.js';

/** Microsoft Exchange NDR diagnostic codes ("550 5.2.3 RESOLVER.RST.RecipSizeLimit; ..."), matched case-sensitively. */
export const EXCHANGE_NDR_CODES: Readonly<Record<string, BounceReason>> = {
  'SMTPSEND.DNS.NonExistentDomain': 'hostunknown', 'SMTPSEND.DNS.MxLoopback': 'networkerror',
  'RESOLVER.ADR.BadPrimary': 'systemerror', 'RESOLVER.ADR.RecipNotFound': 'userunknown',
  'RESOLVER.ADR.ExRecipNotFound': 'userunknown', 'RESOLVER.ADR.RecipLimit': 'toomanyconn',
  'RESOLVER.ADR.InvalidInSmtp': 'systemerror', 'RESOLVER.ADR.Ambiguous': 'systemerror',
  'RESOLVER.RST.AuthRequired': 'securityerror', 'RESOLVER.RST.NotAuthorized': 'rejected',
  'RESOLVER.RST.RecipSizeLimit': 'mesgtoobig', 'QUEUE.Expired': 'expired',
};

/** The reason an Exchange NDR code in the text gives, if any. */
export function ndrReason(text: string): BounceReason | null {
  const m = /\b((?:RESOLVER|QUEUE|SMTPSEND)\.[A-Za-z]+(?:\.\w+)?);/.exec(text);
  return m ? EXCHANGE_NDR_CODES[m[1] as string] ?? null : null;
}
