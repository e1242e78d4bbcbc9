import { area } from "../Area.ts"
import { Nodes } from "./Nodes.ts"

/** decisions.md part 6: the node API, what nodes converge on. */
export const NodeArea = area({ name: "node", stores: [], services: Nodes.layer })
