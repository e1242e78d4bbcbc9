import { Domains } from "@hostplane/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { type AccountDomain, isRefusal, type Refusal, RegistrarAccount } from "./RegistrarAccount.ts"

const answer = <A>(value: Refusal | A): Effect.Effect<A, Domains.RegistrarFailure> =>
  isRefusal(value)
    ? Effect.fail(
        new Domains.RegistrarFailure({ reason: Domains.registrarFailureReason(value.status), message: value.message })
      )
    : Effect.succeed(value)

const domainOf = (view: Record<string, unknown>): Domains.RegistrarDomain => {
  const domain = view as Partial<AccountDomain>
  return {
    name: String(domain.domainName),
    nameservers: [...(domain.nameservers ?? [])],
    locked: domain.locked === true,
    autorenewEnabled: domain.autorenewEnabled === true,
    expiresAt: domain.expireDate === undefined ? null : new Date(domain.expireDate).toISOString(),
    createdAt: domain.createDate === undefined ? null : new Date(domain.createDate).toISOString(),
    renewalCents: domain.renewalPrice === undefined ? null : Domains.centsOf(domain.renewalPrice)
  }
}

/** The `Registrar` port in process, on a `RegistrarAccount` (the same account a `FakeNameCom` can serve). */
export const make = (account: RegistrarAccount = new RegistrarAccount()): Domains.Registrar["Service"] =>
  Domains.Registrar.of({
    checkAvailability: (names) =>
      Effect.map(
        Effect.suspend(() => answer(account.checkAvailability({ domainNames: names }))),
        ({ results }) =>
          results.map((result) => ({
            name: String(result.domainName),
            purchasable: result.purchasable === true,
            premium: result.premium === true,
            purchaseCents: typeof result.purchasePrice === "number" ? Domains.centsOf(result.purchasePrice) : null,
            renewalCents: typeof result.renewalPrice === "number" ? Domains.centsOf(result.renewalPrice) : null
          }))
      ),
    create: (input) =>
      Effect.map(
        Effect.suspend(() =>
          answer(
            account.create({
              domain: {
                domainName: input.name,
                contacts: {
                  registrant: input.contact,
                  admin: input.contact,
                  tech: input.contact,
                  billing: input.contact
                },
                nameservers: input.nameservers,
                locked: input.locked,
                autorenewEnabled: input.autorenew
              },
              ...(input.purchaseCents === null
                ? {}
                : { purchasePrice: Domains.usdOf(input.purchaseCents * input.years) }),
              years: input.years
            })
          )
        ),
        (created) => domainOf(created.domain)
      ),
    get: (name) =>
      Effect.suspend(() => {
        const found = account.get(name)
        return isRefusal(found) && found.status === 404
          ? Effect.succeed(Option.none())
          : Effect.map(answer(found), (view) => Option.some(domainOf(view)))
      }),
    list: (page) =>
      Effect.sync(() => {
        const answer = account.list(page, 1000)
        return { domains: answer.domains.map(domainOf), nextPage: answer.nextPage ?? null }
      }),
    renew: (name, years, purchaseCents) =>
      Effect.map(
        Effect.suspend(() =>
          answer(
            account.renew(name, {
              years,
              ...(purchaseCents === null ? {} : { purchasePrice: Domains.usdOf(purchaseCents) })
            })
          )
        ),
        (renewed) => domainOf(renewed.domain)
      ),
    setLock: (name, locked) =>
      Effect.map(
        Effect.suspend(() => answer(account.action(name, locked ? "lock" : "unlock", {}))),
        domainOf
      ),
    setAutorenew: (name, enabled) =>
      Effect.map(
        Effect.suspend(() => answer(account.action(name, enabled ? "enableAutorenew" : "disableAutorenew", {}))),
        domainOf
      ),
    setNameservers: (name, nameservers) =>
      Effect.map(
        Effect.suspend(() => answer(account.action(name, "setNameservers", { nameservers }))),
        domainOf
      ),
    authCode: (name) =>
      Effect.map(
        Effect.suspend(() => answer(account.authCode(name))),
        (body) => Redacted.make(body.authCode)
      )
  })

export const layer = (account?: RegistrarAccount): Layer.Layer<Domains.Registrar> =>
  Layer.sync(Domains.Registrar, () => make(account))
