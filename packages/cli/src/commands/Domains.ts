import { Effect, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Fs from "node:fs/promises"
import { CliFailure, show, table } from "../Output.ts"
import { resolveOrg, root, session } from "../Root.ts"

/** The signed-in client and the org (`--org`, `.hostplane.json`, else the only or personal org). */
const orgSession = Effect.gen(function* () {
  const flags = yield* root
  const signedIn = yield* session(flags)
  const orgSlug = yield* resolveOrg(flags, ".", signedIn)
  return { flags, api: signedIn.api, orgSlug }
})

const domainName = Argument.String("domain").pipe(Argument.withDescription("The domain name"))
const onOff = (name: string) => Argument.Literals(name, ["on", "off"])

interface DomainRow {
  readonly name: string
  readonly status: string
  readonly source: string
  readonly expiresAt: string | null
  readonly autoRenew: boolean
  readonly locked: boolean
}
const domainRows = (items: ReadonlyArray<DomainRow>) =>
  table([
    ["NAME", "STATUS", "SOURCE", "EXPIRES", "AUTO-RENEW", "LOCKED"],
    ...items.map((d) => [d.name, d.status, d.source, d.expiresAt ?? "", String(d.autoRenew), String(d.locked)])
  ])

const list = Command.make(
  "list",
  {},
  Effect.fn("domains.list")(function* () {
    const { flags, api, orgSlug } = yield* orgSession
    const domains = yield* api.domains.list({ params: { orgSlug } })
    yield* show(flags.json, domains, () => domainRows(domains.items))
  })
).pipe(Command.withDescription("List the org's domains"))

const get = Command.make(
  "show",
  { name: domainName },
  Effect.fn("domains.show")(function* ({ name }) {
    const { flags, api, orgSlug } = yield* orgSession
    const domain = yield* api.domains.get({ params: { orgSlug, name } })
    yield* show(flags.json, domain, () => [
      ...domainRows([domain]),
      `nameservers: ${domain.nameservers.join(", ")}`,
      ...domain.history.map((entry) => `  ${entry.at}  ${entry.action}`)
    ])
  })
).pipe(Command.withDescription("Show a domain with its recent history"))

const check = Command.make(
  "check",
  { names: Argument.String("domain").pipe(Argument.variadic({ min: 1 })) },
  Effect.fn("domains.check")(function* ({ names }) {
    const { flags, api, orgSlug } = yield* orgSession
    const answer = yield* api.domains.check({ params: { orgSlug }, payload: { names } as never })
    yield* show(flags.json, answer, () =>
      table([
        ["NAME", "AVAILABLE", "PREMIUM", "PRICE", "RENEWAL"],
        ...answer.items.map((a) => [
          a.name,
          String(a.available),
          String(a.premium),
          a.priceCents === null ? "" : `$${(a.priceCents / 100).toFixed(2)}`,
          a.renewalCents === null ? "" : `$${(a.renewalCents / 100).toFixed(2)}`
        ])
      ])
    )
  })
).pipe(Command.withDescription("Ask the registrar whether names are available, and their prices"))

const Contact = Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown))

const buy = Command.make(
  "buy",
  {
    name: domainName,
    years: Flag.Int("years").pipe(Flag.withDescription("Registration years (1..10)"), Flag.withDefault(1)),
    contact: Flag.File("contact", { mustExist: true }).pipe(
      Flag.withDescription(
        "A JSON file with the registrant contact: name, email, phone, organization?, address1, city, postalCode, country"
      )
    )
  },
  Effect.fn("domains.buy")(function* ({ name, years, contact }) {
    const { flags, api, orgSlug } = yield* orgSession
    const text = yield* Effect.promise(() => Fs.readFile(contact, "utf8"))
    const parsed = yield* Schema.decodeUnknownEffect(Contact)(text).pipe(
      Effect.mapError(() => new CliFailure({ code: "bad_request", message: `${contact} is not a JSON object` }))
    )
    const domain = yield* api.domains.purchase({
      params: { orgSlug },
      payload: { name, years, contact: parsed } as never
    })
    yield* show(flags.json, domain, () => [`${domain.name} is ${domain.status} (expires ${domain.expiresAt ?? "?"})`])
  })
).pipe(Command.withDescription("Buy a domain (spends money; repeating it resumes an interrupted purchase)"))

const importDomain = Command.make(
  "import",
  { name: domainName },
  Effect.fn("domains.import")(function* ({ name }) {
    const { flags, api, orgSlug } = yield* orgSession
    const domain = yield* api.domains.import({ params: { orgSlug }, payload: { name } as never })
    yield* show(flags.json, domain, () => [
      `${domain.name} is ${domain.status}: point its name servers at ${domain.nameservers.join(", ")}`
    ])
  })
).pipe(Command.withDescription("Manage DNS for a domain registered elsewhere"))

const renew = Command.make(
  "renew",
  { name: domainName, years: Flag.Int("years").pipe(Flag.withDefault(1)) },
  Effect.fn("domains.renew")(function* ({ name, years }) {
    const { flags, api, orgSlug } = yield* orgSession
    const domain = yield* api.domains.renew({ params: { orgSlug, name }, payload: { years } as never })
    yield* show(flags.json, domain, () => domainRows([domain]))
  })
).pipe(Command.withDescription("Renew a domain for more years"))

const autoRenew = Command.make(
  "auto-renew",
  { name: domainName, value: onOff("value") },
  Effect.fn("domains.autoRenew")(function* ({ name, value }) {
    const { flags, api, orgSlug } = yield* orgSession
    const domain = yield* api.domains.autoRenew({ params: { orgSlug, name }, payload: { autoRenew: value === "on" } })
    yield* show(flags.json, domain, () => domainRows([domain]))
  })
).pipe(Command.withDescription("Set the org's auto-renew preference"))

const lock = Command.make(
  "lock",
  { name: domainName, value: onOff("value") },
  Effect.fn("domains.lock")(function* ({ name, value }) {
    const { flags, api, orgSlug } = yield* orgSession
    const domain = yield* api.domains.lock({ params: { orgSlug, name }, payload: { locked: value === "on" } })
    yield* show(flags.json, domain, () => domainRows([domain]))
  })
).pipe(Command.withDescription("Turn the transfer lock on or off"))

const authCode = Command.make(
  "auth-code",
  { name: domainName },
  Effect.fn("domains.authCode")(function* ({ name }) {
    const { flags, api, orgSlug } = yield* orgSession
    const { body } = yield* api.domains.authCode({ params: { orgSlug, name } })
    yield* show(flags.json, body, () => [body.authCode])
  })
).pipe(Command.withDescription("Print the transfer code"))

const sync = Command.make(
  "sync",
  { name: domainName },
  Effect.fn("domains.sync")(function* ({ name }) {
    const { flags, api, orgSlug } = yield* orgSession
    const domain = yield* api.domains.sync({ params: { orgSlug, name } })
    yield* show(flags.json, domain, () => domainRows([domain]))
  })
).pipe(Command.withDescription("Re-read expiry, lock and name servers from the registrar"))

export const domains = Command.make("domains").pipe(
  Command.withDescription("Domains of an org: registration and import (spec 4.13)"),
  Command.withSubcommands([list, get, check, buy, importDomain, renew, autoRenew, lock, authCode, sync])
)
