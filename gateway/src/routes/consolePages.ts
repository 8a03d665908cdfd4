/**
 * The plain pages an identity-provider callback answers with when it does not sign in: a
 * failed sign-in, and the "not a member" page of a stranger (nothing was created for them).
 * No script, no style, every value HTML-escaped; served with `default-src 'none'`.
 */
const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function signInPage(
  kind: 'failed' | 'not_member',
  detail: string,
  verified: boolean,
): string {
  const body =
    kind === 'not_member'
      ? `<h1>Not a member</h1>
<p>You signed in as <strong>${escape(detail)}</strong>, but ${verified ? 'this address is' : 'your identity provider did not verify this address, so it is'} not a member of any tenant of this agentfleet.</p>
<p>Ask an admin of your team to invite this email address (or to allow its domain), then sign in again. Nothing was created for you.</p>`
      : `<h1>Sign-in failed</h1>
<p>${escape(detail)}</p>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${kind === 'not_member' ? 'Not a member' : 'Sign-in failed'} · agentfleet</title></head>
<body><main>${body}
<p><a href="/console/">Back to the sign-in page</a></p></main></body></html>
`;
}
