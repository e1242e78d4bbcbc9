import { migrationsOf } from "../Area.ts"
import { areas } from "../areas.ts"

/** Every area's migrations by `<id>_<name>`, sorted by id; a shipped file is never edited, only followed. */
export const migrations = migrationsOf(areas)
