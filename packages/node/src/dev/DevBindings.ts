import type { Deployments } from "@hostplane/core"
import { bindings } from "../areas.ts"
import { servedHandlers } from "../bindings/Bindings.ts"
import { BindingFailure } from "../bindings/Failure.ts"
import type { DevForm, DevLocal, ServedBinding } from "../bindings/WorkerBinding.ts"

export { devAuthCookie, devCookieValue, devUserOf, devUserOfCookie } from "./DevSignIn.ts"

/** The dev server's one project: secrets and bindings are the folder's own, never a deployed project's. */
export const devProject = "dev"

/** The dev server's local means for the add-ons. */
export type DevAddonOptions = DevLocal

/** The bindings with a dev form, in the node's list's order. */
const devForms = bindings.flatMap((binding) =>
  binding.dev === undefined ? [] : [{ name: binding.name as string, dev: binding.dev as DevForm }]
)

/** What `env` gets for the add-ons `service.json` declares: each present, so code that checks for them runs. */
export const devFlags = (manifest: Deployments.Manifest, local: DevLocal): Record<string, unknown> => {
  const flags: Record<string, unknown> = {}
  for (const { name, dev } of devForms) {
    if (dev.declared(manifest)) flags[name] = dev.entry === undefined ? true : dev.entry(local)
  }
  return flags
}

/** A binding whose every call rejects with `not_available_in_dev`, saying why. */
const refusing = (name: string, dev: DevForm): ServedBinding<any> => {
  const refuse = (method: string) => () => {
    throw new BindingFailure("not_available_in_dev", `env.${name}.${method}() ${dev.unavailable}`)
  }
  return {
    calls: Object.fromEntries(dev.methods.calls.map((method) => [method, refuse(method)])),
    raw: Object.fromEntries((dev.methods.raw ?? []).map((method) => [method, refuse(method)]))
  }
}

/**
 * The add-ons under `hostplane dev`, each by its binding's dev form (`WorkerBinding.dev`, in the binding's own module):
 * the node's own code on the dev server's local means where it can run locally, else a refusal saying why.
 */
export const makeDevBindings = (local: DevLocal) => {
  const served: Record<string, ServedBinding<any>> = {}
  for (const { name, dev } of devForms) served[name] = dev.make(local) ?? refusing(name, dev)
  // No dev project is in any node state: a method reads the folder's values, never `call.granted()`.
  const { handler, rawHandler } = servedHandlers(
    (name) => (Object.hasOwn(served, name) ? served[name] : undefined),
    () => undefined
  )

  const close = async () => {
    await Promise.all(Object.values(served).map((one) => one.close?.()))
  }

  return { handler, rawHandler, close }
}
