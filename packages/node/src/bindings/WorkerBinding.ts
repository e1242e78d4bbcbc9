import type { Deployments, Node } from "@hostplane/core"
import type { DevLocal } from "../dev/DevLocal.ts"
import type { Effect, Scope } from "effect"
import type * as Http from "node:http"
import type { BindingAnswer } from "./Failure.ts"

/** A binding's name: its key in the node state's `bindings` and in a worker's `env`. */
export type BindingName = keyof Node.NodeProject["bindings"] & string

/** A binding's value in a project that holds it. */
export type BindingValue<K extends BindingName> = NonNullable<Node.NodeProject["bindings"][K]>

/**
 * One call a worker made, as its method is given it: the project is the router's, never the tenant's, and its state
 * is the node's converged one at the time of the call, so a revoked grant fails at once.
 */
export interface BindingCall<K extends BindingName> {
  readonly projectId: string
  /** The project's converged state; undefined for a project the node does not hold. */
  readonly project: Node.NodeProject | undefined
  /** The binding's value, or a `not_granted` refusal when the project does not hold it. */
  readonly granted: () => BindingValue<K>
}

/** A method answered in JSON: its arguments in, a value or an error out. */
export type CallMethod<K extends BindingName> = (
  call: BindingCall<K>,
  args: ReadonlyArray<unknown>
) => Promise<BindingAnswer>

/** A method whose value streams: it reads the request's body and answers on `response` itself. */
export type RawMethod<K extends BindingName> = (
  call: BindingCall<K>,
  query: URLSearchParams,
  request: Http.IncomingMessage,
  response: Http.ServerResponse
) => Promise<void>

/** A binding as one node serves it. */
export interface ServedBinding<K extends BindingName> {
  /** What the worker-side module is given for a project that holds the binding (`true` unless it needs more). */
  readonly entry?: (value: BindingValue<K>) => unknown
  readonly calls?: Readonly<Record<string, CallMethod<K>>>
  readonly raw?: Readonly<Record<string, RawMethod<K>>>
  /** A project's new value (null once it no longer holds it): resources of a grant that went are released. */
  readonly converge?: (projectId: string, value: BindingValue<K> | null) => void
  /** Run when the node stops. */
  readonly close?: () => Promise<void>
  /** The handle a request's worker gets for its end user's session; undefined when there is none to give. */
  readonly userHandle?: (
    projectId: string,
    project: Node.NodeProject,
    session: string | undefined
  ) => string | undefined
}

/**
 * A binding under `hostplane dev`: one local project, no grant and no node state. When the folder's `service.json`
 * declares the add-on, `env.<name>` is present; its calls are served on the dev server's local means, or, without
 * them, each rejects with `not_available_in_dev` saying why.
 */
export type { DevLocal }

export interface DevForm {
  readonly declared: (manifest: Deployments.Manifest) => boolean
  /** What the worker-side module is given (`true` when absent). */
  readonly entry?: (local: DevLocal) => unknown
  /** The calls served locally; undefined when this dev server lacks the means. */
  readonly make: (local: DevLocal) => ServedBinding<any> | undefined
  /** Why every call rejects when `make` serves none. */
  readonly unavailable: string
  /** The binding's methods, so a refused call names itself. */
  readonly methods: { readonly calls: ReadonlyArray<string>; readonly raw?: ReadonlyArray<string> }
}

/** What every binding may read when the node builds it. */
export interface BindingOptions {
  /** A statement or call that has not answered by then rejects. */
  readonly queryTimeoutMs: number
  /** How often a binding reports the usage that changed (storage: part 6 wants it within 60 s). */
  readonly usageEveryMs?: number | undefined
}

/**
 * An add-on's binding on the node (decisions.md part 13): its name in the node state and `env`, the module under
 * `worker/bindings/` that builds `env.<name>` inside the isolate, whether a deployment asks for it, and how the node
 * serves its calls. `make` answers undefined when this node lacks what the binding needs: it is then absent from
 * every `env`, rather than failing each call.
 */
export interface WorkerBinding<K extends BindingName, R> {
  readonly name: K
  /** The worker-side module's file in `worker/bindings/`. */
  readonly worker: string
  /** Whether a deployment's manifest asks for the binding on top of the grant; absent, the grant is enough. */
  readonly wanted?: (manifest: Deployments.Manifest) => boolean
  readonly make: (options: BindingOptions) => Effect.Effect<ServedBinding<K> | undefined, never, R | Scope.Scope>
  /** The binding under `hostplane dev`; absent, it is absent from `env` there. */
  readonly dev?: DevForm
}

/** Any add-on's node binding. */
export type AnyWorkerBinding = WorkerBinding<any, any>

/** Declares a binding, checking its methods against its value's type. */
export const workerBinding = <K extends BindingName, R>(binding: WorkerBinding<K, R>): WorkerBinding<K, R> => binding

type ServicesOf<B> = B extends WorkerBinding<any, infer R> ? Exclude<R, Scope.Scope> : never

/** The services the node's bindings need, from the list. */
export type BindingServices<List extends ReadonlyArray<AnyWorkerBinding>> = ServicesOf<List[number]>
