-- A spent ticket remembers the upgrade or password change it was spent on (used_by), so that an
-- in-app upgrade's interactive call may present it again after the silent one asked for a second
-- factor, while that flow is still open or was cancelled for user interaction, and never once it
-- converted, completed, failed or was cancelled by the user (docs/architecture.md §5).
ALTER TABLE upgrade_tickets ADD COLUMN used_by TEXT COLLATE "C";
