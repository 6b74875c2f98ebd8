package deckhand_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"os"
	"strings"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
)

// The examples read where to connect from the environment, as a program
// would; TestMain points them at this package's binaries.

// Sign in, create a token, transfer to AI credit and fetch the invoice PDF.
func ExampleClient() {
	ctx := context.Background()
	c, err := deckhand.New(os.Getenv("DECKHAND_CONTROL_URL"), deckhand.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Login(ctx, os.Getenv("DECKHAND_EMAIL"), os.Getenv("DECKHAND_PASSWORD")); err != nil {
		log.Fatal(err)
	}
	me, err := c.Me(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("signed in as", *me.Email)

	tok, err := c.CreateToken(ctx, "example")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("token prefix:", *tok.Prefix)

	receipt, err := c.TransferToAI(ctx, "1.00", "example-transfer")
	if err != nil {
		log.Fatal(err)
	}
	inv, err := c.GenerateInvoice(ctx, *receipt.TransactionId)
	if err != nil {
		log.Fatal(err)
	}
	var pdf bytes.Buffer
	if _, err := c.InvoicePDF(ctx, *inv.InvoiceId, &pdf); err != nil {
		log.Fatal(err)
	}
	fmt.Println("invoice is a PDF:", bytes.HasPrefix(pdf.Bytes(), []byte("%PDF-")))

	n := 0
	for _, err := range c.Transactions(ctx, 0) {
		if err != nil {
			log.Fatal(err)
		}
		n++
	}
	fmt.Println("transactions:", n)
	// Output:
	// signed in as example@example.com
	// token prefix: svc_
	// invoice is a PDF: true
	// transactions: 2
}

// Run a command, stream another's output, and write and read a file, on
// an agent at a gateway URL.
func ExampleContainer() {
	ctx := context.Background()
	box, err := deckhand.NewContainer(os.Getenv("DECKHAND_GATEWAY_URL"), deckhand.Options{Token: os.Getenv("DECKHAND_AGENT_TOKEN")})
	if err != nil {
		log.Fatal(err)
	}
	r, err := box.Process.Run(ctx, "echo", "hello")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("run: %q exit %d\n", r.Stdout, r.ExitCode)

	p, err := box.Process.StartCommand(ctx, deckhand.Command{Shell: "for i in 1 2 3; do echo tick $i; done"})
	if err != nil {
		log.Fatal(err)
	}
	// Wait follows the output to its end (Stream gives each piece with
	// its stream and offset), resuming after a dropped connection.
	var stdout strings.Builder
	end, err := p.Wait(ctx, &stdout, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(stdout.String())
	fmt.Println("state:", end.State)

	data := make([]byte, 3<<20)
	_, _ = rand.Read(data)
	if err := box.Files.Write(ctx, "/example.bin", data); err != nil {
		log.Fatal(err)
	}
	back, err := box.Files.Read(ctx, "/example.bin")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("round trip:", bytes.Equal(back, data))
	// Output:
	// run: "hello\n" exit 0
	// tick 1
	// tick 2
	// tick 3
	// state: exited
	// round trip: true
}

// Take a screenshot of the container's display. (TestScreenshot runs this
// against the agent on Xvfb; without Xvfb the service answers
// DISPLAY_UNAVAILABLE, so the example has no fixed output.)
func ExampleContainer_Screenshot() {
	ctx := context.Background()
	box, err := deckhand.NewContainer(os.Getenv("DECKHAND_GATEWAY_URL"), deckhand.Options{})
	if err != nil {
		log.Fatal(err)
	}
	var png bytes.Buffer
	_, err = box.Screenshot(ctx, &png)
	switch {
	case deckhand.ErrorCode(err) == "DISPLAY_UNAVAILABLE":
		fmt.Println("no display")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("PNG:", strings.HasPrefix(png.String(), "\x89PNG"))
	}
}
