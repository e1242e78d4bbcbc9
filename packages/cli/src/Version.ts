/** The CLI's version, the same as its package.json's (a test checks): read by `--version` before anything else loads. */
export const version = "0.1.0"
