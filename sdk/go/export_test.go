package deckhand

// keyFetches counts the key-set fetches c made (tests).
func KeyFetches(c *Client) int { return c.v.fetchCount() }
