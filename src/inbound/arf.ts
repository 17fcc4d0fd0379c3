// Reads complaint reports: RFC 5965 ARF (message/feedback-report) and near-ARF provider formats
// (Hotmail JMRP, Apple Mail unsubscribe). Returns null when the message is not a complaint.
import { type Entity, header, leaves, parseEntity } from './mime.js';
import { findAddress } from '../core/address.js';
import { readDsnFields } from './dsn.js';

export interface Complaint {
  addresses: (string | null)[];
  feedbackType: string | null;
  original: Entity | null;
}

function originalOf(root: Entity): Entity | null {
  const part = leaves(root).find((p) => p.type === 'message/rfc822' || p.type.startsWith('text/rfc822-header'));
  return part ? parseEntity(Buffer.from(part.text, 'utf8').toString('latin1')) : null;
}

function rfc5965(root: Entity): Complaint | null {
  const report = leaves(root).find((p) => p.type === 'message/feedback-report');
  if (!report) return null;
  const { perMessage, recipients } = readDsnFields(report.text);
  const fields = new Map([...perMessage, ...(recipients[0] ?? [])]);
  const original = originalOf(root);
  const rcpts = [...report.text.matchAll(/^Original-Rcpt-To:\s*(.+)$/gim)]
    .map((m) => findAddress(m[1]))
    .filter((a): a is string => !!a);
  if (!rcpts.length) {
    const to = original ? header(original.headers, 'to') : null;
    const addr = findAddress(to);
    if (addr) rcpts.push(addr);
  }
  return {
    addresses: rcpts.length ? [...new Set(rcpts)] : [null],
    feedbackType: (fields.get('feedback-type') ?? 'abuse').toLowerCase(),
    original,
  };
}

function nearArf(root: Entity): Complaint | null {
  const h = root.headers;
  if (/^true$/i.test(header(h, 'x-apple-unsubscribe') ?? '')) {
    return { addresses: [findAddress(header(h, 'from'))], feedbackType: 'opt-out', original: null };
  }
  const orig = originalOf(root);
  const jmrp = orig ? header(orig.headers, 'x-hmxmroriginalrecipient') : null;
  const from = (header(h, 'from') ?? '').toLowerCase();
  if (jmrp || (orig && /staff@hotmail\.com/.test(from))) {
    const addr = findAddress(jmrp) ?? findAddress(orig ? header(orig.headers, 'to') : null);
    return { addresses: [addr], feedbackType: 'abuse', original: orig };
  }
  return null;
}

export function readComplaint(root: Entity): Complaint | null {
  return rfc5965(root) ?? nearArf(root);
}
