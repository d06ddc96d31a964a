-- 20: fraud reviews are holds of kind `fraud_review` (one way for a
-- person to decide): each review moves into `holds` under its alert's
-- subject for its round, what it is about kept as its evidence, and the
-- view `fraud_reviews` reads them back as they were (the numbers of
-- `domain::Review` and `domain::HoldState` are the same).
INSERT INTO holds (account, kind, subject, state, reason, evidence, job_id,
                   decided_at, created_at)
    SELECT r.account, 'fraud_review', r.alert, r.state, r.reason,
           json_object('job_key', r.job_key, 'round', r.round,
                       'merchant_order', r.merchant_order, 'payment', r.payment,
                       'delivery_id', r.delivery_id),
           (SELECT j.id FROM jobs j WHERE j.account = r.account AND j.job_key = r.job_key),
           r.decided_at, r.created_at
    FROM fraud_reviews r ORDER BY r.id;
DROP TABLE fraud_reviews;
CREATE VIEW fraud_reviews AS
    SELECT id, account,
           json_extract(evidence, '$.job_key') AS job_key,
           json_extract(evidence, '$.round') AS round,
           subject AS alert,
           json_extract(evidence, '$.merchant_order') AS merchant_order,
           json_extract(evidence, '$.payment') AS payment,
           reason, state,
           json_extract(evidence, '$.delivery_id') AS delivery_id,
           created_at, decided_at
    FROM holds WHERE kind = 'fraud_review';
