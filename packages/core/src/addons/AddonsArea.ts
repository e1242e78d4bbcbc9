import { area } from "../Area.ts"
import { Addons } from "./Addons.ts"

/** The one grant / revoke / status every add-on area plugs its provider into (its `addon` field). */
export const AddonsArea = area({ name: "addons", stores: [], services: Addons.layer })
