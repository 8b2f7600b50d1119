const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function loginPage(options: { action: string; clientId: string; error?: string; username?: string }): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in to mileage (development)</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<style>body{font-family:system-ui,sans-serif;max-width:22rem;margin:4rem auto}label{display:block;margin:.8rem 0 .2rem}
input{width:100%;padding:.4rem;box-sizing:border-box}button{margin-top:1rem;padding:.5rem 1rem}.error{color:#b00020}</style></head>
<body><h1>Sign in</h1><p>Development identity provider, realm <b>mileage</b>. Client: <code>${escapeHtml(options.clientId)}</code></p>
${options.error ? `<p class="error">${escapeHtml(options.error)}</p>` : ''}
<form method="post" action="${escapeHtml(options.action)}">
<label for="username">Username</label><input id="username" name="username" autocomplete="username" value="${escapeHtml(options.username ?? '')}" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form></body></html>`;
}

export function errorPage(title: string, detail: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><link rel="icon" href="data:,"></head>
<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p></body></html>`;
}
