// Package assets loads a paper snapshot's static assets (summary JSON,
// source and translated markdown) by their path relative to the asset
// root: from a local folder first, else from an HTTP base URL, with a
// timeout and a size bound. Callers get the bytes, never a URL; failures
// are a *FetchError saying why (not found, HTTP status, timeout, too
// large, unreadable) without naming the internal location.
package assets
