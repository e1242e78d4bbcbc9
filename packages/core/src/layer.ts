import * as Area from "./Area.ts"
import { areas } from "./areas.ts"

export { area, type AnyArea, type KernelServices, type RegistryServices } from "./Area.ts"
export { areas } from "./areas.ts"

/** The store ports one adapter family (PostgreSQL, memory) provides, all sharing one transaction. */
export type Stores = Area.Stores<typeof areas>

/**
 * Every core service with its ports left open: a host provides the `Stores`, `Settings`, `Tokens`, every provider
 * port (each real or in its explicit `off` form: a forgotten one is a compile error), a `DnsResolver` and
 * `HostedZones` for hostname verification and a `BundleReader` for uploads. The output also carries the registry
 * (holdings, teardown steps, job handlers, add-ons), so runners built beside it see every area's handlers.
 */
export const services = Area.services(areas)

/** The same services with more areas after core's own (a host's or a test's), each contribution kept. */
export const servicesWith = <const Extra extends ReadonlyArray<Area.AnyArea>>(extra: Extra) =>
  Area.services([...areas, ...extra] as const)

/** Every area's job handlers, for the runner: build it on `services` and a `MailTransport`. */
export const jobHandlers = Area.jobHandlers(areas)

/** The job handlers of core's areas and `extra`. */
export const jobHandlersWith = <const Extra extends ReadonlyArray<Area.AnyArea>>(extra: Extra) =>
  Area.jobHandlers([...areas, ...extra] as const)

/** What `services` needs from the host. */
export type Ports = Area.Ports<typeof areas>

/**
 * Every provider port in its explicit `off` form: sign-in through a provider answers 400, billing 501 `billing_off`, the mail webhook
 * refuses every notification; the node mail relay, git, AI calls, domain registration, the database and storage
 * add-ons and end-user sign-in on the edge answer 503; no hostname gets a certificate, no worker code runs. A host
 * merges its real adapters after it (the last layer of a merge wins).
 */
export const providersOff = Area.portsOff(areas)

/** The provider ports of core's areas (`providersOff` gives each in its off form). */
export type ProviderPorts = Area.ProviderPortsOf<(typeof areas)[number]>
