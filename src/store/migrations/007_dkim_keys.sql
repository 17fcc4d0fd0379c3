-- DKIM keys besides a domain's current RSA key (which stays in domains.dkim_*): the `next` key of a
-- rotation (published, not yet used), `retiring` keys (no longer used; kept listed until retire_at)
-- and the optional `ed25519` key (second signature). Private keys never leave the store.
CREATE TABLE dkim_keys (
  id INTEGER PRIMARY KEY,
  domain_id TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('next', 'retiring', 'ed25519')),
  selector TEXT NOT NULL,
  algorithm TEXT NOT NULL CHECK (algorithm IN ('rsa', 'ed25519')),
  private_key TEXT NOT NULL,
  public_key TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified', 'failed')),
  found TEXT,
  error TEXT,
  retire_at INTEGER,
  UNIQUE (domain_id, selector)
);
CREATE INDEX dkim_keys_domain ON dkim_keys (domain_id, role);
-- At most one rotation in progress and one Ed25519 key per domain.
CREATE UNIQUE INDEX dkim_keys_one_next ON dkim_keys (domain_id) WHERE role IN ('next');
CREATE UNIQUE INDEX dkim_keys_one_ed25519 ON dkim_keys (domain_id) WHERE role IN ('ed25519');
