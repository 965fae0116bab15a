-- Server-to-server notifications already processed, by Apple's `jti`: a redelivery is acknowledged
-- and changes nothing. Holds no `sub` or email, only the event type.
CREATE TABLE apple_notifications (
    jti TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    received_at INTEGER NOT NULL
);
