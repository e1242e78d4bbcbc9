import { Option } from "effect"

const offMark: unique symbol = Symbol.for("@hostplane/core/kernel/Port/off")

/**
 * Marks a port's explicit "off" implementation: what a host provides when the port's settings are absent. Every port
 * an area needs is a required dependency of its layer, so leaving one out is a compile error; a service that answers
 * differently while a port is off (503 `no_node_admin` instead of a call) asks `portOn`, never `serviceOption`.
 */
export const portOff = <S extends object>(service: S): S => Object.assign(service, { [offMark]: true })

/** The port when it is a real implementation, `None` when it is its `off` one. */
export const portOn = <S extends object>(service: S): Option.Option<S> =>
  offMark in service ? Option.none() : Option.some(service)
