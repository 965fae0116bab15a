-- What the device forwards from Apple's first authorization (`email`, `fullName`) is kept where the
-- account's profile has no contact email or display name, marked as the device's; an import's values
-- are marked as the import's. `full_name` holds the name's parts as the engine's JSON object;
-- `real_user_status` the identity token's claim (0 unsupported, 1 unknown, 2 likely real). Personal
-- data, deleted with the account by the profile's cascade (docs/architecture.md §7.1).
ALTER TABLE account_profiles ADD COLUMN email_source TEXT CHECK (email_source IN ('import', 'device'));
ALTER TABLE account_profiles ADD COLUMN display_name_source TEXT
    CHECK (display_name_source IN ('import', 'device'));
ALTER TABLE account_profiles ADD COLUMN full_name TEXT;
ALTER TABLE account_profiles ADD COLUMN real_user_status INTEGER CHECK (real_user_status IN (0, 1, 2));

UPDATE account_profiles SET email_source = 'import' WHERE email IS NOT NULL;
UPDATE account_profiles SET display_name_source = 'import' WHERE display_name IS NOT NULL;
