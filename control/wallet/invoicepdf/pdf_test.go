package invoicepdf_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/control/wallet/invoicepdf"
)

func TestRenderIsAPDFWithTheInvoiceText(t *testing.T) {
	paid := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	pdf, err := invoicepdf.Render(invoicepdf.Invoice{Number: "INV-2026-000042", Status: "paid", Currency: "USD",
		IssueDate: paid, DueDate: paid, PaidDate: &paid, Total: "1234.56", Reference: "txn_1", Payment: "Wallet",
		Seller: invoicepdf.Party{Name: "Seller Ltd", Lines: []string{"1 Main St"}},
		Buyer:  invoicepdf.Party{Name: "Zoë Buyer", Lines: []string{"zoe@example.com"}},
		Items:  []invoicepdf.Item{{Description: "AI credit", Amount: "1200.00"}, {Description: "Fee", Amount: "34.56"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(pdf), "%PDF-") {
		t.Fatalf("not a PDF: %q", pdf[:10])
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Fatal("pdftotext missing (apt install poppler-utils)")
	}
	path := filepath.Join(t.TempDir(), "i.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pdftotext", path, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"INV-2026-000042", "1234.56 USD", "Seller Ltd", "Zoë Buyer", "2026-03-04", "AI credit", "34.56"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}
