-- Team-transfer lookups, and the Hide My Email facts that Apple's notifications carry.

-- `getCredentialState` for a sender-team id after a transfer finds the account by the id it had
-- (facts §3.5). An Apple id belongs to one account (apple_links.sub is unique), so this is too.
CREATE UNIQUE INDEX transfer_records_old_sub ON transfer_records (old_sub);

-- `transfer status` counts the records per state.
CREATE INDEX transfer_records_status ON transfer_records (status);

-- Whether Apple forwards mail from the user's private relay address, as the last `email-enabled` /
-- `email-disabled` notification said (facts §4); NULL until one arrives. `email_forwarding_at` is
-- that event's time, so a late redelivery of an older event cannot undo a newer one.
ALTER TABLE apple_links ADD COLUMN email_forwarding_enabled INTEGER CHECK (email_forwarding_enabled IN (0, 1));
ALTER TABLE apple_links ADD COLUMN email_forwarding_at INTEGER;
