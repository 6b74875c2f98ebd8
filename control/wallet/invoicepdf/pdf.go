// Package invoicepdf renders one invoice as a PDF (go-pdf/fpdf, the core
// Helvetica font, so no font files are needed): seller, buyer, invoice
// number, issue/due/paid dates, one line per item and the total.
package invoicepdf

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/go-pdf/fpdf"
)

// Party is the seller or the buyer.
type Party struct {
	Name  string
	Lines []string
}

// Item is one invoice line.
type Item struct {
	Description string
	Amount      string // "12.50"
}

// Invoice is what the PDF shows.
type Invoice struct {
	Number    string
	Status    string
	Currency  string
	IssueDate time.Time
	DueDate   time.Time
	PaidDate  *time.Time
	Seller    Party
	Buyer     Party
	Items     []Item
	Total     string
	Reference string // the transaction id
	Payment   string // how it was paid
}

// Render returns the PDF bytes.
func Render(inv Invoice) ([]byte, error) {
	p := fpdf.New("P", "mm", "A4", "")
	p.SetTitle("Invoice "+inv.Number, true)
	p.SetAuthor(inv.Seller.Name, true)
	p.SetCreationDate(inv.IssueDate)
	p.SetModificationDate(inv.IssueDate)
	tr := p.UnicodeTranslatorFromDescriptor("") // cp1252 for the core font
	p.AddPage()
	p.SetFont("Helvetica", "B", 20)
	p.CellFormat(0, 12, "INVOICE", "", 1, "L", false, 0, "")
	p.SetFont("Helvetica", "", 11)
	p.CellFormat(0, 6, tr("Invoice number: "+inv.Number), "", 1, "L", false, 0, "")
	p.CellFormat(0, 6, "Issue date: "+day(inv.IssueDate), "", 1, "L", false, 0, "")
	p.CellFormat(0, 6, "Due date: "+day(inv.DueDate), "", 1, "L", false, 0, "")
	if inv.PaidDate != nil {
		p.CellFormat(0, 6, "Paid date: "+day(*inv.PaidDate), "", 1, "L", false, 0, "")
	}
	p.CellFormat(0, 6, tr("Status: "+inv.Status), "", 1, "L", false, 0, "")
	p.Ln(4)
	y := p.GetY()
	party := func(x float64, title string, pt Party) {
		p.SetXY(x, y)
		p.SetFont("Helvetica", "B", 11)
		p.CellFormat(85, 6, title, "", 2, "L", false, 0, "")
		p.SetFont("Helvetica", "", 10)
		p.CellFormat(85, 5, tr(pt.Name), "", 2, "L", false, 0, "")
		for _, l := range pt.Lines {
			p.CellFormat(85, 5, tr(l), "", 2, "L", false, 0, "")
		}
	}
	party(10, "From", inv.Seller)
	yAfter := p.GetY()
	party(110, "Bill to", inv.Buyer)
	p.SetXY(10, max(yAfter, p.GetY())+8)
	p.SetFont("Helvetica", "B", 10)
	p.SetFillColor(230, 230, 230)
	p.CellFormat(140, 8, "Description", "1", 0, "L", true, 0, "")
	p.CellFormat(50, 8, "Amount ("+inv.Currency+")", "1", 1, "R", true, 0, "")
	p.SetFont("Helvetica", "", 10)
	for _, it := range inv.Items {
		p.CellFormat(140, 8, tr(it.Description), "1", 0, "L", false, 0, "")
		p.CellFormat(50, 8, it.Amount, "1", 1, "R", false, 0, "")
	}
	p.SetFont("Helvetica", "B", 11)
	p.CellFormat(140, 9, "Total", "1", 0, "R", false, 0, "")
	p.CellFormat(50, 9, inv.Total+" "+inv.Currency, "1", 1, "R", false, 0, "")
	p.Ln(6)
	p.SetFont("Helvetica", "", 9)
	if inv.Payment != "" {
		p.CellFormat(0, 5, tr("Paid with: "+inv.Payment), "", 1, "L", false, 0, "")
	}
	if inv.Reference != "" {
		p.CellFormat(0, 5, "Transaction: "+inv.Reference, "", 1, "L", false, 0, "")
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		return nil, fmt.Errorf("render invoice %s: %w", inv.Number, err)
	}
	return buf.Bytes(), nil
}

func day(t time.Time) string { return strings.TrimSpace(t.UTC().Format("2006-01-02")) }
