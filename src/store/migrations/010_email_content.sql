-- Message bytes kept out of the hot tables (emails, deliveries): the client's own message of an SMTP
-- submission and the attachments of an API email, keyed by email seq, read only when the message is built.
-- emails keeps only what lists show: attachments_json (filename, content_type, size) and whether a raw message exists.
ALTER TABLE emails ADD COLUMN attachments_json TEXT;
ALTER TABLE emails ADD COLUMN raw_message INTEGER NOT NULL DEFAULT 0;

CREATE TABLE email_messages (
  email_seq INTEGER PRIMARY KEY REFERENCES emails(seq) ON DELETE CASCADE,
  message BLOB NOT NULL
);

CREATE TABLE email_attachments (
  id INTEGER PRIMARY KEY,
  email_seq INTEGER NOT NULL REFERENCES emails(seq) ON DELETE CASCADE,
  filename TEXT NOT NULL,
  content_type TEXT NOT NULL,
  content_id TEXT,
  content BLOB NOT NULL
);
CREATE INDEX email_attachments_email ON email_attachments (email_seq, id);
