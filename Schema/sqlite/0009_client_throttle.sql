-- Failed credential checks per client, shared by every server on the database: for each client key
-- (an address, an IPv6 client by its /64), when its debt of failures is paid off, in Unix
-- milliseconds (the generic cell rate algorithm's theoretical arrival time). A row whose debt is
-- paid says nothing a missing row would not, and is deleted when a failure is counted.
CREATE TABLE client_throttle (
    client_key TEXT PRIMARY KEY,
    paid_off_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX client_throttle_paid_off ON client_throttle (paid_off_at);
