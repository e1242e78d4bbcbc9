// Injected into the CommonJS bundle for sources that use `import.meta.url` (which a CommonJS file lacks): this file's URL.
export const importMetaUrl = require("node:url").pathToFileURL(__filename).href
