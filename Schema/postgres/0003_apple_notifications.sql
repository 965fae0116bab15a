-- Server-to-server notifications already processed, by Apple's `jti`: a redelivery is acknowledged
-- and changes nothing. Holds no `sub` or email, only the event type.
CREATE TABLE apple_notifications (
    jti TEXT COLLATE "C" PRIMARY KEY,
    type TEXT COLLATE "C" NOT NULL,
    received_at BIGINT NOT NULL
);
