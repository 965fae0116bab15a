-- Upgrades left in `converting` by a server that stopped mid-conversion are found by the start-up
-- sweep without reading every upgrade. Partial, so only an upgrade entering or leaving `converting`
-- writes to it.
CREATE INDEX upgrade_sessions_converting ON upgrade_sessions (expires_at) WHERE status = 'converting';
