-- The same columns as Schema/sqlite/0019_device_given_profiles.sql: where the contact email and the
-- display name came from (an import, or the device forwarding Apple's first authorization), the
-- name's parts the device forwarded, and the identity token's `real_user_status`.
ALTER TABLE account_profiles ADD COLUMN email_source TEXT COLLATE "C" CHECK (email_source IN ('import', 'device'));
ALTER TABLE account_profiles ADD COLUMN display_name_source TEXT COLLATE "C"
    CHECK (display_name_source IN ('import', 'device'));
ALTER TABLE account_profiles ADD COLUMN full_name TEXT COLLATE "C";
ALTER TABLE account_profiles ADD COLUMN real_user_status BIGINT CHECK (real_user_status IN (0, 1, 2));

UPDATE account_profiles SET email_source = 'import' WHERE email IS NOT NULL;
UPDATE account_profiles SET display_name_source = 'import' WHERE display_name IS NOT NULL;
