-- Team-transfer lookups, and the Hide My Email facts that Apple's notifications carry.

-- `getCredentialState` for a sender-team id after a transfer finds the account by the id it had.
-- An Apple id belongs to one account (apple_links.sub is unique), so this is too. Named as
-- PostgreSQL names a column's UNIQUE constraint, so a violation reads as transfer_records.old_sub.
ALTER TABLE transfer_records ADD CONSTRAINT transfer_records_old_sub_key UNIQUE (old_sub);

-- `transfer status` counts the records per state.
CREATE INDEX transfer_records_status ON transfer_records (status);

-- Whether Apple forwards mail from the user's private relay address, as the last `email-enabled` /
-- `email-disabled` notification said; NULL until one arrives. `email_forwarding_at` is that
-- event's time, so a late redelivery of an older event cannot undo a newer one.
ALTER TABLE apple_links ADD COLUMN email_forwarding_enabled BOOLEAN;
ALTER TABLE apple_links ADD COLUMN email_forwarding_at BIGINT;
