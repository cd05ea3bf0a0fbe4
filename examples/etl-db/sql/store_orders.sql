-- Stores the cleaned orders (a JSON array, the second param) in one
-- statement. order_id is the primary key, so a re-run (or a retried attempt
-- whose first try committed) inserts nothing twice; batch_key records the
-- execution's idempotency key (the first param).
INSERT IGNORE INTO orders (order_id, email, amount_cents, batch_key)
SELECT o.order_id, o.email, o.amount_cents, ?
FROM JSON_TABLE(?, '$[*]' COLUMNS (
  order_id     VARCHAR(32)  PATH '$.id',
  email        VARCHAR(255) PATH '$.email',
  amount_cents INT          PATH '$.amount_cents'
)) AS o
