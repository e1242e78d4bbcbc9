// Run: DATABASE_URL=postgres://... npx node --conditions=@hostplane/source examples/embed/main.ts
import * as Pg from "@hostplane/adapters-pg"
import {
  ArtifactStoreDisk,
  BundleReader,
  IdentityProviderOAuth,
  PasswordHasherScrypt,
  SealerAesGcm
} from "@hostplane/adapters-providers"
import * as DnsResolverUdp from "@hostplane/adapters-providers/dns/DnsResolverUdp"
import { configLayer, Hostnames } from "@hostplane/core"
import { HostAuthenticator } from "@hostplane/http"
import { Layer, Redacted } from "effect"
import { startHost } from "./host.ts"

const databaseUrl = process.env["DATABASE_URL"]
if (databaseUrl === undefined) throw new Error("set DATABASE_URL to the host's PostgreSQL")

// The host picks the adapters: PostgreSQL stores on its own database, its own settings, and the DNS resolvers that
// custom hostnames are verified through (SERVICE_DNS_RESOLVERS, else the system's).
const ports = Layer.mergeAll(
  Pg.layer.pipe(Layer.provideMerge(Pg.PgDatabase.layer(Redacted.make(databaseUrl)))),
  // Each area's config: the shared settings and the sign-in ones (the rest keep their defaults).
  configLayer({ settings: { publicUrl: "http://127.0.0.1:3000" }, identity: { devAuth: true } }),
  DnsResolverUdp.layerConfig,
  // Sign-in through an OAuth provider when SERVICE_IDP_* names one.
  IdentityProviderOAuth.layerConfig,
  HostAuthenticator.off,
  Hostnames.HostedZones.layerNone,
  // Secrets are sealed with SERVICE_SEAL_KEY (else the key file .hostplane/seal.key); access passwords use scrypt.
  SealerAesGcm.layerConfig,
  PasswordHasherScrypt.layer,
  // Uploaded bundles stream into <SERVICE_DATA_DIR or .hostplane>/artifacts.
  BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreDisk.layerConfig))
)

const host = await startHost(ports, 3000)
console.log("host listening on http://127.0.0.1:3000 (hostplane under /v1)")
process.once("SIGINT", () => void host.close())
