module github.com/go-mysql-org/go-mysql

go 1.23.0

require (
	filippo.io/edwards25519 v1.1.0
	github.com/google/uuid v1.3.0
	github.com/klauspost/compress v1.17.8
	github.com/pingcap/errors v0.11.5-0.20250318082626-8f80e5cb09ec
	github.com/shopspring/decimal v1.2.0
)
