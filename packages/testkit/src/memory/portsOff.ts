import { Kernel, providersOff } from "@hostplane/core"
import { Layer } from "effect"

/**
 * Every port core needs beyond the stores, settings, DNS, crypto and bundles, in its explicit `off` form (ids by Web
 * Crypto): what a test or an example builds on when it exercises none of those providers. A test that needs one
 * merges the real or fake adapter after this layer (the last layer of a merge wins).
 */
export const portsOff = Layer.merge(Kernel.Tokens.layer, providersOff)
