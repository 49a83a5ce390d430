package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

// reportService is a fakeService that writes incident reports of recovery
// 7 only.
type reportService struct {
	*fakeService
	format string
}

func (r *reportService) RecoveryReport(ctx context.Context, id int64, format string) ([]byte, error) {
	r.record("RecoveryReport")
	r.format = format
	if id != 7 {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "no recovery %d", id)
	}
	if format == dbpilot.ReportJSON {
		return []byte(`{"recovery":{"id":7}}`), nil
	}
	return []byte("<!DOCTYPE html><title>Incident report</title>"), nil
}

func TestRecoveryReport(t *testing.T) {
	ctx := context.Background()
	svc := &reportService{fakeService: &fakeService{}}
	srv := httptest.NewServer(NewServer(svc, ServerOptions{}))
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL, "")

	page, err := c.RecoveryReport(ctx, 7, dbpilot.ReportHTML)
	if err != nil || !strings.HasPrefix(string(page), "<!DOCTYPE html>") || svc.format != dbpilot.ReportHTML {
		t.Fatalf("html: %q, %v (format %q)", page, err, svc.format)
	}
	data, err := c.RecoveryReport(ctx, 7, dbpilot.ReportJSON)
	if err != nil || string(data) != `{"recovery":{"id":7}}` || svc.format != dbpilot.ReportJSON {
		t.Fatalf("json: %q, %v (format %q)", data, err, svc.format)
	}
	if _, err := c.RecoveryReport(ctx, 8, dbpilot.ReportHTML); dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND || !strings.Contains(err.Error(), "no recovery 8") {
		t.Errorf("unknown recovery: %v", err)
	}

	// The page is HTML that may load nothing; bad requests are JSON errors.
	resp, err := http.Get(srv.URL + "/api/recoveries/7/report")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct, csp := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"); ct != "text/html; charset=utf-8" || !strings.HasPrefix(csp, "default-src 'none'") {
		t.Errorf("Content-Type %q, Content-Security-Policy %q", ct, csp)
	}
	for path, want := range map[string]int{
		"/api/recoveries/abc/report":          http.StatusBadRequest,
		"/api/recoveries/0/report":            http.StatusBadRequest,
		"/api/recoveries/7/report?format=pdf": http.StatusBadRequest,
		"/api/recoveries/9/report":            http.StatusNotFound,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || !strings.Contains(resp.Header.Get("Content-Type"), "json") || !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: %d %q %s; want %d and a JSON error", path, resp.StatusCode, resp.Header.Get("Content-Type"), b, want)
		}
	}

	// A service without reports: 422.
	plain := httptest.NewServer(NewServer(&fakeService{}, ServerOptions{}))
	t.Cleanup(plain.Close)
	if _, err := NewClient(plain.URL, "").RecoveryReport(ctx, 7, dbpilot.ReportHTML); dbpilot.ErrorCode(err) != dbpilot.EUNSUPPORTED {
		t.Errorf("a service without reports: %v", err)
	}

	// Reads that need a token need it for the report too.
	locked := httptest.NewServer(NewServer(svc, ServerOptions{Token: "s3cret", ReadRequiresToken: true}))
	t.Cleanup(locked.Close)
	if _, err := NewClient(locked.URL, "").RecoveryReport(ctx, 7, dbpilot.ReportHTML); dbpilot.ErrorCode(err) != dbpilot.EAUTH {
		t.Errorf("without the token: %v", err)
	}
	if _, err := NewClient(locked.URL, "s3cret").RecoveryReport(ctx, 7, dbpilot.ReportHTML); err != nil {
		t.Errorf("with the token: %v", err)
	}
}
