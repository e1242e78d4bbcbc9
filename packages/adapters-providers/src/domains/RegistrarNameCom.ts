import { Domains } from "@hostplane/core"
import { Config, ConfigProvider, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"

/** The Name.com API v4 account: the API origin (`https://api.name.com`, or `https://api.dev.name.com` for the sandbox). */
export interface Options {
  readonly url: string | URL
  readonly username: string
  readonly token: Redacted.Redacted<string>
  /** Time limit of each call; default 30 seconds (a create may take a while at the registry). */
  readonly timeout?: Duration.Input | undefined
}

export const defaultTimeout = Duration.seconds(30)

// Name.com's Go server leaves false booleans, empty lists and zero prices out of its answers (omitempty).
const Price = Schema.optional(Schema.Finite)

const DomainAnswer = Schema.Struct({
  domainName: Schema.String,
  nameservers: Schema.optional(Schema.Array(Schema.String)),
  locked: Schema.optional(Schema.Boolean),
  autorenewEnabled: Schema.optional(Schema.Boolean),
  expireDate: Schema.optional(Schema.String),
  createDate: Schema.optional(Schema.String),
  renewalPrice: Price
})

const Availability = Schema.Struct({
  results: Schema.optional(
    Schema.Array(
      Schema.Struct({
        domainName: Schema.String,
        purchasable: Schema.optional(Schema.Boolean),
        premium: Schema.optional(Schema.Boolean),
        purchasePrice: Price,
        renewalPrice: Price
      })
    )
  )
})

const Created = Schema.Struct({ domain: DomainAnswer })
const Listed = Schema.Struct({
  domains: Schema.optional(Schema.Array(DomainAnswer)),
  nextPage: Schema.optional(Schema.Finite)
})
const AuthCodeAnswer = Schema.Struct({ authCode: Schema.String })
const ErrorAnswer = Schema.Struct({ message: Schema.optional(Schema.String) })

const failure = (reason: Domains.RegistrarFailure["reason"], message: string) =>
  new Domains.RegistrarFailure({ reason, message })

const isoOf = (value: string | undefined) =>
  value === undefined || Number.isNaN(Date.parse(value)) ? null : new Date(value).toISOString()

const domainOf = (answer: typeof DomainAnswer.Type): Domains.RegistrarDomain => ({
  name: answer.domainName.toLowerCase(),
  nameservers: answer.nameservers ?? [],
  locked: answer.locked ?? false,
  autorenewEnabled: answer.autorenewEnabled ?? false,
  expiresAt: isoOf(answer.expireDate),
  createdAt: isoOf(answer.createDate),
  renewalCents: answer.renewalPrice === undefined ? null : Domains.centsOf(answer.renewalPrice)
})

/**
 * The `Registrar` port as a client of Name.com's API v4 (decisions.md part 7): HTTP Basic `username:token`, JSON
 * bodies, errors `{ message, details }`. Only the registrar's `message` is carried into a failure: `details` may echo
 * the contact, which must not reach a log line or a job's stored error.
 */
export const make = Effect.fnUntraced(function* (options: Options) {
  const origin = new URL(options.url.toString())
  const base = origin.toString().replace(/\/+$/, "")
  const timeout = options.timeout ?? defaultTimeout
  const client = (yield* HttpClient.HttpClient).pipe(
    HttpClient.mapRequest((request) =>
      request.pipe(
        HttpClientRequest.acceptJson,
        HttpClientRequest.setHeader("user-agent", "hostplane"),
        HttpClientRequest.basicAuth(options.username, options.token)
      )
    )
  )

  const call = <S extends Schema.Constraint & { readonly DecodingServices: never }>(
    what: string,
    request: HttpClientRequest.HttpClientRequest,
    schema: S
  ): Effect.Effect<S["Type"], Domains.RegistrarFailure> =>
    Effect.gen(function* () {
      const response = yield* client
        .execute(request)
        .pipe(Effect.mapError((error) => failure("error", `${what}: the registrar is unreachable (${error.message})`)))
      if (response.status < 200 || response.status >= 300) {
        const body = yield* HttpClientResponse.schemaBodyJson(ErrorAnswer)(response).pipe(
          Effect.orElseSucceed(() => ({ message: undefined }))
        )
        const said = (body.message ?? "").slice(0, 200)
        return yield* failure(
          Domains.registrarFailureReason(response.status),
          `${what}: the registrar answered ${response.status}${said === "" ? "" : ` (${said})`}`
        )
      }
      return yield* HttpClientResponse.schemaBodyJson(schema)(response).pipe(
        Effect.mapError(() => failure("error", `${what}: the registrar sent an unreadable answer`))
      )
    }).pipe(
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.fail(failure("error", `${what}: the registrar did not answer in time`))
      })
    )

  const path = (name: string, verb?: string) =>
    `${base}/v4/domains/${encodeURIComponent(name)}${verb === undefined ? "" : `:${verb}`}`
  const post = (url: string, body: unknown) => HttpClientRequest.bodyJsonUnsafe(HttpClientRequest.post(url), body)

  const checkAvailability = Effect.fn("RegistrarNameCom.checkAvailability")(function* (names: ReadonlyArray<string>) {
    const answer = yield* call(
      "checkAvailability",
      post(`${base}/v4/domains:checkAvailability`, { domainNames: names }),
      Availability
    )
    return (answer.results ?? []).map((result): Domains.RegistrarAvailability => ({
      name: result.domainName.toLowerCase(),
      purchasable: result.purchasable ?? false,
      premium: result.premium ?? false,
      purchaseCents: result.purchasePrice === undefined ? null : Domains.centsOf(result.purchasePrice),
      renewalCents: result.renewalPrice === undefined ? null : Domains.centsOf(result.renewalPrice)
    }))
  })

  const create = Effect.fn("RegistrarNameCom.create")(function* (input: Domains.RegistrarCreate) {
    const contact = {
      firstName: input.contact.firstName,
      lastName: input.contact.lastName,
      ...(input.contact.companyName === null ? {} : { companyName: input.contact.companyName }),
      address1: input.contact.address1,
      city: input.contact.city,
      zip: input.contact.zip,
      country: input.contact.country,
      phone: input.contact.phone,
      email: input.contact.email
    }
    const body = {
      domain: {
        domainName: input.name,
        contacts: { registrant: contact, admin: contact, tech: contact, billing: contact },
        nameservers: input.nameservers,
        locked: input.locked,
        autorenewEnabled: input.autorenew
      },
      ...(input.purchaseCents === null ? {} : { purchasePrice: Domains.usdOf(input.purchaseCents * input.years) }),
      years: input.years
    }
    return domainOf((yield* call("createDomain", post(`${base}/v4/domains`, body), Created)).domain)
  })

  const get = Effect.fn("RegistrarNameCom.get")(function* (name: string) {
    return yield* call("getDomain", HttpClientRequest.get(path(name)), DomainAnswer).pipe(
      Effect.map((answer) => Option.some(domainOf(answer))),
      Effect.catchIf(
        (error) => error.reason === "not_found",
        () => Effect.succeed(Option.none<Domains.RegistrarDomain>())
      )
    )
  })

  const list = Effect.fn("RegistrarNameCom.list")(function* (page: number) {
    const request = HttpClientRequest.get(`${base}/v4/domains`).pipe(
      HttpClientRequest.setUrlParams({ page: String(page), perPage: "1000" })
    )
    const answer = yield* call("listDomains", request, Listed)
    return { domains: (answer.domains ?? []).map(domainOf), nextPage: answer.nextPage ?? null }
  })

  const renew = Effect.fn("RegistrarNameCom.renew")(function* (
    name: string,
    years: number,
    purchaseCents: number | null
  ) {
    const body = { ...(purchaseCents === null ? {} : { purchasePrice: Domains.usdOf(purchaseCents) }), years }
    return domainOf((yield* call("renewDomain", post(path(name, "renew"), body), Created)).domain)
  })

  const action = (what: string, name: string, verb: string, body: unknown = {}) =>
    Effect.map(call(what, post(path(name, verb), body), DomainAnswer), domainOf)

  return Domains.Registrar.of({
    checkAvailability,
    create,
    get,
    list,
    renew,
    setLock: (name, locked) => action("lockDomain", name, locked ? "lock" : "unlock"),
    setAutorenew: (name, enabled) => action("setAutorenew", name, enabled ? "enableAutorenew" : "disableAutorenew"),
    setNameservers: (name, nameservers) => action("setNameservers", name, "setNameservers", { nameservers }),
    authCode: (name) =>
      Effect.map(call("getAuthCode", HttpClientRequest.get(path(name, "getAuthCode")), AuthCodeAnswer), (answer) =>
        Redacted.make(answer.authCode)
      )
  })
})

/** The Name.com registrar over `fetch`. */
export const layer = (options: Options): Layer.Layer<Domains.Registrar> =>
  Layer.effect(Domains.Registrar, make(options)).pipe(Layer.provide(FetchHttpClient.layer))

const setting = (name: string) =>
  Config.String(name).pipe(Config.option, Config.map(Option.filter((value) => value.trim() !== "")))

/**
 * `SERVICE_REGISTRAR_URL`, `SERVICE_REGISTRAR_USERNAME`, `SERVICE_REGISTRAR_TOKEN`: none when none is set (domain
 * registration is off: 503 `registrar_not_configured`); a config error when only some are, or the URL is not http(s).
 */
export const config: Config.Config<Option.Option<Options>> = Config.all({
  url: setting("SERVICE_REGISTRAR_URL"),
  username: setting("SERVICE_REGISTRAR_USERNAME"),
  token: Config.Redacted("SERVICE_REGISTRAR_TOKEN").pipe(
    Config.option,
    Config.map(Option.filter((value) => Redacted.value(value).trim() !== ""))
  ),
  timeout: Config.option(Config.Duration("SERVICE_REGISTRAR_TIMEOUT"))
}).pipe(
  Config.flatMap((env): Config.Config<Option.Option<Options>> => {
    const set = [Option.isSome(env.url), Option.isSome(env.username), Option.isSome(env.token)].filter(Boolean).length
    if (set === 0) return Config.succeed(Option.none())
    if (Option.isNone(env.url) || Option.isNone(env.username) || Option.isNone(env.token)) {
      return Config.fail(
        new ConfigProvider.SourceError({
          message: "a registrar needs SERVICE_REGISTRAR_URL, SERVICE_REGISTRAR_USERNAME and SERVICE_REGISTRAR_TOKEN"
        })
      )
    }
    const url = env.url.value
    if (!URL.canParse(url) || !["http:", "https:"].includes(new URL(url).protocol)) {
      return Config.fail(
        new ConfigProvider.SourceError({ message: "SERVICE_REGISTRAR_URL must be an http or https URL" })
      )
    }
    return Config.succeed(
      Option.some({
        url,
        username: env.username.value,
        token: env.token.value,
        timeout: Option.getOrUndefined(env.timeout)
      })
    )
  })
)

/** The registrar from the `SERVICE_REGISTRAR_*` settings when they are set, else `Registrar.off`. */
export const layerConfig: Layer.Layer<Domains.Registrar, Config.ConfigError> = Layer.unwrap(
  Effect.map(config, Option.match({ onNone: () => Domains.Registrar.off, onSome: layer }))
)
