-- One row per bucket entry. Keys sort by their bytes (COLLATE "C"), as in
-- bbolt. Put stores JSON in value (jsonb, readable with psql); PutRaw stores
-- exact bytes in raw.
CREATE TABLE kv (
    bucket text COLLATE "C" NOT NULL,
    key    text COLLATE "C" NOT NULL,
    value  jsonb,
    raw    bytea,
    PRIMARY KEY (bucket, key),
    CHECK ((value IS NULL) <> (raw IS NULL))
);

-- Sequences (Tx.NextSeq), one counter per bucket, changed inside the
-- transaction that uses the number.
CREATE TABLE kv_seq (
    bucket text COLLATE "C" PRIMARY KEY,
    n      bigint NOT NULL
);
