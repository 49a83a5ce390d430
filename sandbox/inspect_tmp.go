package sandbox

import (
	"context"
	"errors"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func inspectDB(ctx context.Context, db *mysql.DB) (*dbpilot.Instance, error) {
	return nil, errors.New("todo")
}
