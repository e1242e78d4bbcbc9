import { Config, Context, Effect, Layer, Option, Redacted } from "effect"

/** The node API's settings (decisions.md part 6). */
export interface NodeConfigShape {
  /** `SERVICE_NODE_TOKEN`: the bearer token nodes present; none turns the node API off (501 `node_api_off`). */
  readonly token: Option.Option<Redacted.Redacted<string>>
}

export class NodeConfig extends Context.Service<NodeConfig, NodeConfigShape>()("@hostplane/core/node/NodeConfig") {
  static readonly make = (overrides: { readonly token?: string | undefined } = {}) =>
    Layer.succeed(NodeConfig, {
      token: overrides.token === undefined ? Option.none() : Option.some(Redacted.make(overrides.token))
    })

  /** `SERVICE_NODE_TOKEN`; empty counts as unset. */
  static readonly layerConfig = Layer.unwrap(
    Effect.map(Config.option(Config.Redacted("SERVICE_NODE_TOKEN")), (token) =>
      Layer.succeed(NodeConfig, { token: Option.filter(token, (value) => Redacted.value(value).trim() !== "") })
    )
  )
}
