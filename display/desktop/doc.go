// Package desktop is the display wing's seam: the desktop the display
// service drives, as the Driver (an X server: display/x11) and the
// Accessibility bus (AT-SPI: display/atspi) give it, and the values they
// speak (points, windows, keysyms, accessible elements). The service's
// concerns (display/input, capture, accessibility, recordings, takeover)
// and the drivers meet here and nowhere else, so a driver never imports
// the service it serves.
package desktop
