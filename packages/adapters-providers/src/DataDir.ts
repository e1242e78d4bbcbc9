import { Config, Option } from "effect"
import * as Path from "node:path"

/**
 * An absolute path under the data directory (decisions.md part 5): `<SERVICE_DATA_DIR or .hostplane>/<name>`,
 * an empty setting counting as unset.
 */
export const inDataDir = (name: string): Config.Config<string> =>
  Config.option(Config.String("SERVICE_DATA_DIR")).pipe(
    Config.map((dataDir) =>
      Path.resolve(
        Option.getOrElse(
          Option.filter(dataDir, (value) => value.trim() !== ""),
          () => ".hostplane"
        ),
        name
      )
    )
  )
