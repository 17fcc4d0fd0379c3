// A cookie-keeping form client for the dashboard over plain HTTP (no redirects followed): what a browser
// without JavaScript does, for tests that check statuses, cookies, CSRF and page text.

export class FormClient {
  cookies = new Map<string, string>();
  constructor(readonly base: string) {}

  async req(method: string, path: string, form?: Record<string, string>, headers: Record<string, string> = {}) {
    const h: Record<string, string> = { ...headers, cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
    if (form) h['content-type'] ??= 'application/x-www-form-urlencoded';
    const res = await fetch(this.base + path, {
      method,
      headers: h,
      body: form && new URLSearchParams(form),
      redirect: 'manual',
    });
    for (const c of res.headers.getSetCookie()) {
      const [k, v] = c.split(';')[0].split('=');
      if (v) this.cookies.set(k, v);
      else this.cookies.delete(k);
    }
    return {
      status: res.status,
      location: res.headers.get('location'),
      setCookie: res.headers.getSetCookie(),
      text: await res.text(),
    };
  }

  /** The CSRF token of a page's forms ('' when it has none). */
  csrf(page: string) {
    return /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
  }

  /** Signs in with the sign-in form's fields (an API key, or the operator password and a team). */
  async signInWith(fields: Record<string, string>) {
    const page = await this.req('GET', '/dashboard/sign-in');
    return this.req('POST', '/dashboard/sign-in', { _csrf: this.csrf(page.text), ...fields });
  }

  signIn(key: string) {
    return this.signInWith({ key });
  }
}
