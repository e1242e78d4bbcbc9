import type { PgClient } from "@effect/sql-pg"
import * as Pg from "@hostplane/adapters-pg"
import {
  ArtifactStoreDisk,
  BundleReader,
  MailTransportAuto,
  PasswordHasherScrypt,
  SealerAesGcm,
  TokensNode
} from "@hostplane/adapters-providers"
import * as DnsResolverUdp from "@hostplane/adapters-providers/dns/DnsResolverUdp"
import {
  type Access,
  type ConfigOverrides,
  type Configs,
  configLayer,
  Deployments,
  Hostnames,
  Identity,
  jobHandlers,
  Jobs,
  Mail,
  providersOff as allProvidersOff,
  type Secrets,
  services
} from "@hostplane/core"
import { loadConsole } from "@hostplane/console"
import {
  Console,
  HostAuthenticator,
  type HostIdentity,
  type HostRequest,
  type Mounted,
  mount,
  type Ports
} from "@hostplane/http"
import { ConfigProvider, type Duration, Layer, Redacted } from "effect"

/** Where hostplane's tables live: a URL, or the host's own `PgClient` layer (its connection settings are reused). */
export type HostplaneDatabase =
  { readonly url: string | Redacted.Redacted<string> } | { readonly client: Layer.Layer<PgClient.PgClient, unknown> }

/** The adapters `makeHostplane` picks by default; give any of them to replace it. */
export interface HostplaneAdapters {
  /** Seals project secrets: `sealKey`, else `<dataDir>/seal.key` (created on first start). */
  readonly sealer?: Layer.Layer<Secrets.Sealer, unknown>
  /** Hashes project access passwords: scrypt. */
  readonly passwordHasher?: Layer.Layer<Access.PasswordHasher, unknown>
  /** Reads uploaded bundles into the artifact store: `<dataDir>/artifacts`. */
  readonly bundles?: Layer.Layer<Deployments.BundleReader | Deployments.ArtifactStore, unknown>
  /** Verifies custom hostnames: `SERVICE_DNS_RESOLVERS`, else the system's resolvers; no hosted zones. */
  readonly dns?: Layer.Layer<Hostnames.DnsResolver | Hostnames.HostedZones, unknown>
  /** Sign-in through an OAuth provider (`IdentityProviderOAuth`); off by default. */
  readonly identityProvider?: Layer.Layer<Identity.IdentityProvider, unknown>
  /**
   * Provider adapters, each replacing its off form (every provider is off by default): one adapter
   * (`PaymentGatewayPolar.layer({...})`), or every area's from `SERVICE_*` as the standalone server runs them
   * (`providersFromEnv` of `@hostplane/adapters-providers` and `@hostplane/adapters-pg`). They may read the settings.
   */
  readonly providers?: Layer.Layer<never, unknown, Configs>
  /** The host's sign-in as a layer (an Effect authenticator); `authenticate` is the plain-function form. */
  readonly hostAuthenticator?: Layer.Layer<HostAuthenticator, unknown>
  /** Where the job runner sends mail: SMTP from `SERVICE_SMTP_URL`, else `.eml` files in `<dataDir>/outbox`. */
  readonly mailTransport?: Layer.Layer<Mail.MailTransport, unknown>
}

export interface HostplaneOptions {
  /** The host's PostgreSQL: hostplane creates and uses only its own schema there. */
  readonly database: HostplaneDatabase
  /** The schema (default `hostplane`). */
  readonly schema?: string | undefined
  /**
   * Where the host mounts it (`/platform`): the listener and the handler answer under it. `settings.publicUrl`
   * should then end with it, so links hostplane makes (invites, sign-in callbacks) point under it.
   */
  readonly prefix?: string | undefined
  /** Every area's settings, as the standalone server's `SERVICE_*` would set them; the rest keep their defaults. */
  readonly settings?: ConfigOverrides | undefined
  /**
   * The host's own sign-in: its request (headers, cookies) to `{ provider, subject, email?, name? }`, or nothing
   * for nobody. Given `timeout` (default 5 seconds); a throw or a late answer is 503, never an anonymous caller.
   */
  readonly authenticate?:
    ((request: HostRequest) => HostIdentity | undefined | null | Promise<HostIdentity | undefined | null>) | undefined
  readonly authenticateTimeout?: Duration.Input | undefined
  /**
   * Where the default adapters keep their files: the seal key file, uploaded bundles, the mail outbox. Default
   * `SERVICE_DATA_DIR`, else `.hostplane` in the working directory.
   */
  readonly dataDir?: string | undefined
  /**
   * The key ring that seals project secrets, as `SERVICE_SEAL_KEY` takes it (`<keyId>:<base64 of 32 bytes>`, comma
   * separated, the first active; or one bare key). Default `SERVICE_SEAL_KEY`, else `<dataDir>/seal.key`.
   */
  readonly sealKey?: string | Redacted.Redacted<string> | undefined
  /**
   * The web console under the prefix (`<prefix>/`, `<prefix>/console/`, `<prefix>/orgs/...`), as `npm ci` built it;
   * default on. Signed in by the host's `authenticate`, or by hostplane's own sign-in.
   */
  readonly console?: boolean | undefined
  /** The job runner (mail, hostname checks, project deletes) in this process; default on. */
  readonly jobs?: boolean | undefined
  readonly adapters?: HostplaneAdapters | undefined
}

/** The providers a library host leaves off, each in its explicit off form, with ids from Node's crypto. */
const providersOff = Layer.merge(TokensNode.layer, allProvidersOff)

/**
 * The default adapters read their folder and key as the standalone server does (`SERVICE_DATA_DIR`,
 * `SERVICE_SEAL_KEY`); what the host gave in the options comes first, so it need not set the environment.
 */
const filesConfig = (options: HostplaneOptions) => {
  const given: Record<string, string> = {}
  if (options.dataDir !== undefined) given["SERVICE_DATA_DIR"] = options.dataDir
  if (options.sealKey !== undefined) {
    given["SERVICE_SEAL_KEY"] = typeof options.sealKey === "string" ? options.sealKey : Redacted.value(options.sealKey)
  }
  return ConfigProvider.layerAdd(ConfigProvider.fromUnknown(given), { asPrimary: true })
}

/** The host's database as hostplane's stores, migrated into its schema first. */
const databaseLayer = (database: HostplaneDatabase, schema: string | undefined) => {
  const options = schema === undefined ? {} : { schema }
  return "url" in database
    ? Pg.PgDatabase.layer(typeof database.url === "string" ? Redacted.make(database.url) : database.url, options)
    : Pg.PgDatabase.layerFromClient(options).pipe(Layer.provide(database.client))
}

/**
 * The whole library in one call (decisions.md part 18): PostgreSQL stores on the host's database, the settings,
 * every default adapter (each replaceable), the job runner, and the host's sign-in; answers the Node listener, the
 * web-standard handler and the in-process typed client, all under `prefix`.
 */
export const makeHostplane = (options: HostplaneOptions): Promise<Mounted<Ports | Layer.Success<typeof services>>> => {
  const adapters = options.adapters ?? {}
  const stores = Pg.layer.pipe(Layer.provideMerge(databaseLayer(options.database, options.schema)))
  const files = filesConfig(options)
  const bundles =
    adapters.bundles ??
    BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreDisk.layerConfig), Layer.provide(files))
  const hostAuthenticator =
    adapters.hostAuthenticator ??
    (options.authenticate === undefined
      ? HostAuthenticator.off
      : HostAuthenticator.fromFunction(
          options.authenticate,
          options.authenticateTimeout === undefined ? {} : { timeout: options.authenticateTimeout }
        ))
  const settings = configLayer(options.settings ?? {})
  const ports = Layer.mergeAll(
    stores,
    settings,
    adapters.sealer ?? SealerAesGcm.layerConfig.pipe(Layer.provide(files)),
    adapters.passwordHasher ?? PasswordHasherScrypt.layer,
    bundles,
    adapters.dns ?? Layer.merge(DnsResolverUdp.layerConfig, Hostnames.HostedZones.layerNone),
    hostAuthenticator,
    providersOff,
    // The last layer of a merge wins: each adapter given replaces its off form above.
    (adapters.providers ?? Layer.empty).pipe(Layer.provide(Layer.merge(settings, files))),
    adapters.identityProvider ?? Layer.empty,
    Layer.succeed(Console)(options.console === false ? undefined : loadConsole())
  )
  // One runner for every job kind, on the same services the routes use (one build shares them).
  const jobs =
    options.jobs === false
      ? Layer.empty
      : Jobs.JobRunner.background().pipe(
          Layer.provide(jobHandlers),
          Layer.provide(
            Layer.merge(services, adapters.mailTransport ?? MailTransportAuto.layerConfig.pipe(Layer.provide(files)))
          )
        )
  return mount(jobs.pipe(Layer.provideMerge(ports)), { prefix: options.prefix })
}
