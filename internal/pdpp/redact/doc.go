// Package redact removes secret-like members from JSON: every object member
// whose name holds "secret" in any letter case (signing_secret, Secret,
// SECRET, secrets, and spellings that only fold to it, such as a long s or
// \u escapes), at any depth, inside arrays too, with its whole value. The
// PDPP adapter passes the RS's control-plane bodies (event subscriptions)
// and every RS error through it, so such a member of those reaches a
// client only where the adapter puts it back on purpose: the signing
// secret of the create reply, shown once. Record data is the person's own
// granted data and does not pass through it.
package redact
