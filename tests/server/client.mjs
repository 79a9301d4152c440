// A browser stand-in for the reference server's tests: keeps cookies, sends the CSRF token
// (and a guest token) once it has one. A string body is sent as it is, anything else as JSON.
export class Client {
  constructor(root, app) {
    this.root = root;
    this.app = app;
    this.cookies = new Map();
    this.headers = {};
  }
  async request(method, path, body, extra = {}) {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const response = await fetch(new URL(path, this.root), {
      method,
      headers: { ...this.headers, ...extra, ...(cookie ? { cookie } : {}) },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair.indexOf("=");
      this.cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const text = await response.text();
    let data;
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
    return { status: response.status, data, headers: response.headers };
  }
  channel() {
    return this.app.verifyToken(this.cookies.get("async-token"))?.channel ?? null;
  }
  token() {
    return this.app.verifyToken(this.cookies.get("async-token"));
  }
  async signIn(user) {
    await this.request("GET", "/");
    const res = await this.request("POST", "/login", { user });
    const { data } = await this.request("GET", "/api/v1/security/csrf_token/");
    this.headers["X-CSRFToken"] = data.result;
    if (res.data.guestToken) this.headers["X-GuestToken"] = res.data.guestToken;
    return res;
  }
}
