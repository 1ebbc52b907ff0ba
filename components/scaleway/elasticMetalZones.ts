/**
 * The zones Elastic Metal is sold in and the region of each, as scaleway-sdk-go's baremetal/v1
 * `API.Zones()` lists them (api/baremetal/v1/baremetal_sdk.go).
 */
export const ELASTIC_METAL_ZONES: Readonly<Record<string, string>> = {
  "fr-par-1": "fr-par",
  "fr-par-2": "fr-par",
  "nl-ams-1": "nl-ams",
  "nl-ams-2": "nl-ams",
  "pl-waw-2": "pl-waw",
  "pl-waw-3": "pl-waw",
};
