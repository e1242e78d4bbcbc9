import { suitesOf } from "../Area.ts"
import { areas } from "../areas.ts"

/** Every store port contract against one adapter family; `name` prefixes each suite (`memory`, `postgres`). */
export const contractSuites = suitesOf(areas)
