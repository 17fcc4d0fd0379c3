// A MailComposer tree written out synchronously: the bytes MimeNode.build() streams, made by the library's own
// pieces (each node's buildHeaders, its getTransferEncoding, its QP and base64 Encoders run on one chunk, the same
// boundaries and separators, the final newline of LastNewline), without the stream machinery around them
// (a PassThrough, a pipeline with abort signals and a setImmediate per part), which was most of the cost of composing
// a message (~230 µs of ~250). Only for trees whose every content is a string or a Buffer and that carry no raw
// node, transform, post-process function or newline option; anything else → null, and the caller streams as before.
// test/unit/mime-sync.test.ts compares both outputs byte for byte over many messages (re-run it on any nodemailer
// upgrade: checked against 10.6).
import MimeNode from 'nodemailer/lib/mime-node';
import { Encoder as QpEncoder } from 'nodemailer/lib/qp';
import { Encoder as Base64Encoder } from 'nodemailer/lib/base64';
import type { Transform } from 'node:stream';

/** The parts of nodemailer's MimeNode this reads (fields its own stream() reads). */
export interface MimeTree {
  content?: unknown;
  _raw?: unknown;
  childNodes: MimeTree[];
  multipart?: string | false;
  boundary?: string;
  contentType?: string;
  newline?: unknown;
  _transforms: unknown[];
  _processFuncs: unknown[];
  buildHeaders(): string;
  getTransferEncoding(): string | false;
}

function supported(n: MimeTree): boolean {
  if (n._raw || n._transforms.length || n._processFuncs.length || n.newline) return false;
  const c = n.content;
  if (c && typeof c !== 'string' && !Buffer.isBuffer(c)) return false;
  return n.childNodes.every(supported);
}

/** Runs a stream encoder over one chunk, synchronously (what the pipeline does with a string's one chunk). */
function encode(enc: Transform, input: Buffer, out: Buffer[]): void {
  const t = enc as unknown as {
    push(chunk: Buffer | string | null, encoding?: BufferEncoding): boolean;
    _transform(chunk: Buffer, encoding: string, done: (err?: Error | null) => void): void;
    _flush(done: (err?: Error | null) => void): void;
  };
  let failed: Error | null = null;
  t.push = (chunk, encoding) => {
    if (chunk !== null && chunk.length) out.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk);
    return true;
  };
  const done = (err?: Error | null) => {
    if (err) failed = err;
  };
  t._transform(input, 'buffer', done);
  t._flush(done);
  if (failed) throw failed;
}

function write(n: MimeTree, out: Buffer[]): void {
  const transferEncoding = n.getTransferEncoding(); // before buildHeaders, as stream() does
  out.push(Buffer.from(n.buildHeaders() + '\r\n\r\n'));
  const c = n.content as string | Buffer | undefined;
  if (c) {
    const bytes = typeof c === 'string' ? Buffer.from(c) : c;
    if (transferEncoding === 'base64') encode(new Base64Encoder({}), bytes, out);
    else if (transferEncoding === 'quoted-printable')
      encode(new QpEncoder({ binary: !/^text\//i.test(n.contentType || '') } as never), bytes, out);
    else out.push(bytes);
  }
  if (!n.multipart) return;
  n.childNodes.forEach((child, i) => {
    out.push(Buffer.from((i > 0 ? '\r\n' : '') + '--' + n.boundary + '\r\n'));
    write(child, out);
  });
  out.push(Buffer.from('\r\n--' + n.boundary + '--\r\n'));
}

/** The message MimeNode.build() would make from `root`, or null when the tree needs the streaming path. */
export function buildSync(root: MimeTree): Buffer | null {
  if (!supported(root)) return null;
  const out: Buffer[] = [];
  write(root, out);
  let lastByte: number | undefined;
  for (let i = out.length - 1; i >= 0 && lastByte === undefined; i--) lastByte = out[i][out[i].length - 1];
  if (lastByte === 0x0d) out.push(Buffer.from('\n'));
  else if (lastByte !== 0x0a) out.push(Buffer.from('\r\n'));
  return Buffer.concat(out);
}

// MimeNode normalises a header name with three regular expressions on every setHeader/getHeader (~17 µs of a
// message); the names are few and the function is pure, so its results are remembered (at most 1,000 names).
const proto = MimeNode.prototype as unknown as { _normalizeHeaderKey(key: unknown): string };
const normalizeKey = proto._normalizeHeaderKey;
const KEYS = new Map<string, string>();
proto._normalizeHeaderKey = function (key: unknown): string {
  if (typeof key !== 'string') return normalizeKey.call(this, key);
  let k = KEYS.get(key);
  if (k === undefined) {
    k = normalizeKey.call(this, key);
    if (KEYS.size < 1000) KEYS.set(key, k);
  }
  return k;
};

// MimeNode draws 8 random bytes for each node's own boundary base (crypto.randomBytes: ~7 µs on the outbound worker),
// but only the root's is ever read (every part's boundary is made from its root's): a child made without one takes
// its parent's instead, which changes no byte of a message (test/unit/mime-sync.test.ts).
const createChild = (MimeNode.prototype as unknown as { createChild: CreateChild }).createChild;
type CreateChild = (
  this: { baseBoundary?: string },
  contentType?: unknown,
  options?: Record<string, unknown>,
) => unknown;
(MimeNode.prototype as unknown as { createChild: CreateChild }).createChild = function (contentType, options) {
  if (!options && typeof contentType === 'object') return createChild.call(this, contentType, options);
  if (options && options.baseBoundary === undefined && this.baseBoundary)
    options = { ...options, baseBoundary: this.baseBoundary };
  return createChild.call(this, contentType, options);
};
