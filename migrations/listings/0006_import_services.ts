/**
 * The directory of import and logistics companies GET /import-services answers, seeded with a
 * demonstration directory per region (the regions the offers use: Polish voivodeships, and the
 * countries cars are imported from). Names, addresses and contacts are illustrative: the websites
 * and mailboxes are under the reserved `.example` domain. Operators replace the rows with their own
 * directory (plain SQL on `listings.import_services`).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

type Entry = readonly [
  id: string,
  name: string,
  region: string,
  city: string,
  services: ReadonlyArray<string>,
  phone: string,
  description: string
]

const entries: ReadonlyArray<Entry> = [
  ["mz-autotrans", "AutoTrans Mazowsze", "mazowieckie", "Warszawa", ["import", "transport", "registration"], "+48 22 100 20 30", "Car import from Germany and Belgium with door-to-door delivery and registration in Warsaw."],
  ["mz-celnik", "Agencja Celna Celnik", "mazowieckie", "Warszawa", ["customs", "registration"], "+48 22 100 44 10", "Customs clearance and excise duty for vehicles from outside the EU, including US imports."],
  ["mz-lawety", "Lawety Radom 24h", "mazowieckie", "Radom", ["transport"], "+48 48 100 23 45", "Tow-truck transport of single cars across Poland and from the EU."],
  ["mp-krakimport", "KrakImport", "malopolskie", "Kraków", ["import", "inspection", "registration"], "+48 12 100 70 70", "Inspection at the seller, purchase and import of used cars from Germany and Austria."],
  ["mp-tatra-logistics", "Tatra Logistics", "malopolskie", "Nowy Sącz", ["transport", "customs"], "+48 18 100 11 22", "Car carriers between southern Poland, Slovakia and Austria."],
  ["sl-silesia-cars", "Silesia Cars Import", "slaskie", "Katowice", ["import", "registration", "financing"], "+48 32 100 50 60", "Import on commission with financing; German and Dutch auctions."],
  ["sl-stacja-kontroli", "Stacja Kontroli Pojazdów Bytom", "slaskie", "Bytom", ["inspection"], "+48 32 100 91 19", "First technical inspection of imported vehicles, translation of documents."],
  ["wp-poznan-auto-import", "Poznań Auto Import", "wielkopolskie", "Poznań", ["import", "transport", "registration"], "+48 61 100 33 44", "Weekly transports from Berlin and Hamburg; registration in the Poznań district."],
  ["wp-kalisz-naprawy", "Kalisz Blacharstwo", "wielkopolskie", "Kalisz", ["repair", "inspection"], "+48 62 100 12 12", "Body repair of damaged imports, including US auction cars."],
  ["ds-wroclaw-logistyka", "Wrocław Logistyka Aut", "dolnoslaskie", "Wrocław", ["transport", "customs"], "+48 71 100 80 90", "Transport from Germany and the Czech Republic; container handling from Bremerhaven."],
  ["ds-karkonosze-import", "Karkonosze Import", "dolnoslaskie", "Jelenia Góra", ["import", "registration"], "+48 75 100 40 40", "Import of premium cars from Germany with a full document service."],
  ["pm-baltic-port-cars", "Baltic Port Cars", "pomorskie", "Gdynia", ["customs", "transport", "import"], "+48 58 100 66 77", "US and Canadian cars by container through Gdynia: unloading, customs, delivery."],
  ["pm-tricity-rejestracja", "Trójmiasto Rejestracje", "pomorskie", "Gdańsk", ["registration", "inspection"], "+48 58 100 21 21", "Registration of imported cars in the Tricity, tax and translations."],
  ["ld-lodz-auto-hub", "Łódź Auto Hub", "lodzkie", "Łódź", ["import", "transport"], "+48 42 100 55 55", "Central-Poland hub for car carriers from the Benelux."],
  ["zp-szczecin-import", "Szczecin Import Aut", "zachodniopomorskie", "Szczecin", ["import", "transport", "registration"], "+48 91 100 12 34", "Close to the German border: same-day pickups in Mecklenburg and Brandenburg."],
  ["de-berlin-exporte", "Berlin Fahrzeugexport", "germany", "Berlin", ["export", "transport", "customs"], "+49 30 1000 2000", "Export plates, transit insurance and export documents for cars bought in Germany."],
  ["de-hamburg-autologistik", "Hamburg Autologistik", "germany", "Hamburg", ["transport", "inspection"], "+49 40 1000 3000", "Pre-purchase inspections and car carriers from northern Germany to Poland."],
  ["de-bremerhaven-ro-ro", "Bremerhaven RoRo Services", "germany", "Bremerhaven", ["customs", "transport"], "+49 471 1000 400", "RoRo and container unloading for US imports entering the EU."],
  ["de-munchen-gutachter", "München Gutachter Service", "germany", "München", ["inspection"], "+49 89 1000 5000", "Independent vehicle appraisals before purchase, in German, English and Polish."],
  ["nl-rotterdam-car-shipping", "Rotterdam Car Shipping", "netherlands", "Rotterdam", ["customs", "transport"], "+31 10 100 2000", "Container unloading and EU customs clearance for US and Canadian vehicles."],
  ["nl-utrecht-export", "Utrecht Auto Export", "netherlands", "Utrecht", ["export", "inspection", "transport"], "+31 30 100 3000", "Export handling of Dutch cars with NAP mileage verification."],
  ["be-antwerp-vehicle-logistics", "Antwerp Vehicle Logistics", "belgium", "Antwerpen", ["customs", "transport"], "+32 3 100 20 00", "Port handling in Antwerp and onward transport to Central Europe."],
  ["be-brussels-auto-export", "Brussels Auto Export", "belgium", "Bruxelles", ["export", "import"], "+32 2 100 30 00", "Buying agents at Belgian dealers and leasing returns."],
  ["fr-lyon-export-auto", "Lyon Export Auto", "france", "Lyon", ["export", "transport"], "+33 4 10 00 20 00", "Export documents (certificat de cession, WW plates) and transport east."],
  ["fr-paris-inspection", "Paris Inspection Véhicules", "france", "Paris", ["inspection"], "+33 1 10 00 30 00", "Pre-purchase inspections in Île-de-France."],
  ["us-nj-auto-shipping", "New Jersey Auto Shipping", "usa", "Newark, NJ", ["export", "transport", "customs"], "+1 201 555 0100", "Auction pickup, export customs and container loading to Bremerhaven, Rotterdam and Gdynia."],
  ["us-ga-auction-buyers", "Georgia Auction Buyers", "usa", "Savannah, GA", ["import", "export"], "+1 912 555 0142", "Buying at Copart and IAAI on behalf of European clients, consolidated containers."],
  ["us-ca-west-coast-export", "West Coast Car Export", "usa", "Long Beach, CA", ["export", "transport"], "+1 562 555 0175", "West-coast auction pickups and shipping via the Panama Canal."]
]

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE import_services (
      id text PRIMARY KEY,
      name text NOT NULL,
      region text NOT NULL,
      city text,
      services text[] NOT NULL DEFAULT '{}',
      website text,
      phone text,
      email text,
      description text NOT NULL DEFAULT ''
    )
  `
  yield* sql`CREATE INDEX import_services_region ON import_services (lower(region))`
  const rows = entries.map(([id, name, region, city, services, phone, description]) => ({
    id,
    name,
    region,
    city,
    services: `{${services.join(",")}}`,
    website: `https://${id}.example`,
    phone,
    email: `contact@${id}.example`,
    description
  }))
  yield* sql`
    INSERT INTO import_services (id, name, region, city, services, website, phone, email, description)
    SELECT id, name, region, city, services::text[], website, phone, email, description
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      AS r(id text, name text, region text, city text, services text, website text, phone text, email text, description text)
  `
})
