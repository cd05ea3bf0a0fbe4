// A real OpenID Connect provider for the tests (oidc-provider from npm, a
// certified implementation), on a loopback port:
//
//   node oidc_provider.mjs PORT KEY_PEM_OUT [DASHBOARD_REDIRECT_URI]
//
// It signs with an RSA key it makes at start (published at its jwks_uri;
// written as PKCS#8 PEM to KEY_PEM_OUT, so a test can also sign tokens the
// provider would never issue: expired ones). Three principals, each a
// confidential client with the client_credentials grant and secret
// "secret-NAME": alice (group viewers), bob (ops), carol (admins). Their
// access tokens are RS256 JWTs for the resource urn:apollo11 (aud
// "apollo11"; resource urn:other gives aud "other"), with
// preferred_username and groups claims.
//
// With DASHBOARD_REDIRECT_URI, a fourth client "apollo11-dashboard"
// (secret "dashboard-secret", the authorization code grant, that redirect
// URI) signs people in through the provider's own login and consent pages
// (oidc-provider's development interactions: any password is taken, the
// login names the account). Accounts alice, bob and carol are in the groups
// above, any other name in none; their ID tokens carry preferred_username
// and groups (scope profile). Prints "listening ISSUER" when ready, and
// serves until killed.

import crypto from "node:crypto";
import fs from "node:fs";
import Provider from "oidc-provider";

const [port, keyOut, dashboardRedirect] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
fs.writeFileSync(keyOut, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid: "k1", use: "sig", alg: "RS256" };

const users = { alice: "viewers", bob: "ops", carol: "admins" };
const clients = Object.keys(users).map((name) => ({
  client_id: name,
  client_secret: `secret-${name}`,
  grant_types: ["client_credentials"],
  redirect_uris: [],
  response_types: [],
}));
if (dashboardRedirect) {
  clients.push({
    client_id: "apollo11-dashboard",
    client_secret: "dashboard-secret",
    grant_types: ["authorization_code"],
    response_types: ["code"],
    redirect_uris: [dashboardRedirect],
    token_endpoint_auth_method: "client_secret_basic",
  });
}
const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [jwk] },
  cookies: { keys: [crypto.randomBytes(32).toString("hex")] },
  claims: { openid: ["sub"], profile: ["preferred_username", "groups"] },
  // The claims of the scopes asked for go into the ID token itself (the
  // node reads the user's groups there).
  conformIdTokenClaims: false,
  findAccount: (_ctx, id) => ({
    accountId: id,
    claims: () => ({ sub: id, preferred_username: id, groups: users[id] ? [users[id]] : [] }),
  }),
  features: {
    devInteractions: { enabled: Boolean(dashboardRedirect) },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => "urn:apollo11",
      getResourceServerInfo: (_ctx, resource) => ({
        scope: "api",
        audience: resource === "urn:other" ? "other" : "apollo11",
        accessTokenFormat: "jwt",
        accessTokenTTL: 600,
        jwt: { sign: { alg: "RS256" } },
      }),
    },
  },
  extraTokenClaims: (_ctx, token) => {
    const name = token.clientId;
    return users[name] ? { preferred_username: name, groups: [users[name]] } : undefined;
  },
});
provider.listen(Number(port), "127.0.0.1", () => {
  process.stdout.write(`listening ${issuer}\n`);
});
