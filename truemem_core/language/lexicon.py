"""Word lists the rule-based extractor recognises, as regex alternations (folded text).

Kept apart from the rules so the rules stay readable; every list is a closed
set on purpose: an unknown word means "not sure", and the rules then say nothing.
"""

from __future__ import annotations

from truemem_core.language.text import words


def alternation(text: str) -> str:
    """``"a b c"`` -> ``"(?:a|b|c)"``, longest first so "step-son" beats "son"."""
    items = sorted(words(text), key=len, reverse=True)
    return "(?:" + "|".join(item.replace("_", r"\s+") for item in items) + ")"


JOBS_EN = alternation(
    "accountant actor actress administrator analyst architect artist assistant astronaut attorney "
    "auditor author baker banker barber barista bartender biologist bookkeeper builder butcher "
    "buyer carpenter cashier ceo cfo cto coo chef chemist cleaner clerk coach consultant "
    "contractor cook coordinator copywriter counselor counsellor dancer dentist designer "
    "detective developer dietitian director doctor driver economist editor electrician engineer "
    "entrepreneur executive farmer firefighter fireman fisherman florist freelancer gardener "
    "geologist guard hairdresser hairstylist historian housekeeper illustrator instructor intern "
    "investor janitor journalist judge landscaper lawyer lecturer librarian lifeguard linguist "
    "machinist manager marketer mathematician mechanic medic midwife miner model musician nanny "
    "nurse nutritionist officer optometrist painter paralegal paramedic pastor pharmacist "
    "photographer physician physicist physiotherapist pilot plumber poet policeman policewoman "
    "police_officer politician producer professor programmer psychiatrist psychologist realtor "
    "receptionist recruiter reporter researcher salesman saleswoman salesperson scientist "
    "secretary senator server sheriff singer soldier songwriter specialist statistician stylist "
    "supervisor surgeon surveyor tailor teacher technician therapist trainer translator tutor "
    "veterinarian vet waiter waitress welder writer youtuber streamer influencer sailor marine "
    "cop trucker truck_driver mailman postman dispatcher radiologist cardiologist pediatrician "
    "dermatologist zoologist archaeologist astronomer pianist guitarist drummer violinist "
    "composer rapper dj comedian filmmaker animator blogger vlogger podcaster founder co-founder "
    "cofounder owner principal dean president apprentice bouncer caretaker caregiver custodian "
    "lumberjack rancher shepherd sergeant captain lieutenant colonel scholar postdoc clinician "
    "hygienist cashier mechanic dentist carer teller broker underwriter pharmacist chiropractor "
    "firefighter ranger paralegal welder roofer plasterer bricklayer mason locksmith pilot "
    "flight_attendant stewardess chauffeur courier estate_agent real_estate_agent homemaker "
    "housewife househusband student freshman sophomore undergrad undergraduate retiree "
    "veteran volunteer worker dealer guide wrestler olympian trader operator agent "
    "representative rep host hostess stocker installer inspector dispatcher seamstress "
    "zookeeper beekeeper stuntman stuntwoman stunt_double tattoo_artist"
)
# Heads that describe a situation rather than a job: "Is a student", not "Works as a student".
NOT_WORK_EN = words(
    "student freshman sophomore undergrad undergraduate retiree veteran volunteer homemaker "
    "housewife househusband"
)
JOBS_ES = alternation(
    "ingeniero ingeniera profesor profesora maestro maestra medico medica doctor doctora "
    "enfermero enfermera abogado abogada estudiante programador programadora desarrollador "
    "desarrolladora disenador disenadora arquitecto arquitecta contador contadora contable "
    "periodista escritor escritora cocinero cocinera chef camarero camarera mesero mesera "
    "policia bombero bombera psicologo psicologa dentista veterinario veterinaria farmaceutico "
    "farmaceutica cientifico cientifica investigador investigadora analista consultor "
    "consultora gerente director directora jefe jefa empresario empresaria emprendedor "
    "emprendedora vendedor vendedora comercial administrativo administrativa secretario "
    "secretaria electricista fontanero fontanera plomero mecanico mecanica carpintero "
    "carpintera agricultor agricultora granjero granjera conductor conductora taxista "
    "camionero camionera piloto azafata azafato musico musica artista actor actriz fotografo "
    "fotografa traductor traductora jubilado jubilada autonomo autonoma freelance funcionario "
    "funcionaria militar soldado bibliotecario bibliotecaria peluquero peluquera panadero "
    "panadera carnicero carnicera obrero obrera tecnico tecnica fisioterapeuta nutricionista "
    "ama_de_casa cajero cajera economista biologo biologa quimico quimica fisico fisica "
    "matematico matematica abogado cirujano cirujana pediatra psiquiatra terapeuta "
    "entrenador entrenadora fundador fundadora duena dueno becario becaria"
)
HEALTH_EN = alternation(
    "diabetes asthma celiac celiac_disease coeliac coeliac_disease epilepsy adhd add autism "
    "anxiety depression migraines migraine arthritis high_blood_pressure hypertension cancer "
    "crohn's crohns ibs lupus ms multiple_sclerosis heart_disease insomnia ptsd ocd "
    "bipolar_disorder bipolar dyslexia a_disability cerebral_palsy scoliosis a_heart_condition "
    "a_bad_back bad_knees a_pacemaker an_eating_disorder gout eczema psoriasis hiv hepatitis "
    "fibromyalgia endometriosis pcos sleep_apnea tinnitus glaucoma cataracts dementia "
    "alzheimer's parkinson's diabetic type_1_diabetes type_2_diabetes lactose_intolerance "
    "gluten_intolerance a_nut_allergy a_peanut_allergy allergies an_allergy a_chronic_illness "
    "chronic_pain a_prosthetic_leg a_prosthetic_arm one_leg one_arm one_kidney a_transplant "
    "a_heart_transplant a_kidney_transplant a_food_allergy food_allergies"
)
DIET_EN = alternation(
    "vegetarian vegan pescatarian pescetarian celiac coeliac diabetic lactose_intolerant "
    "lactose-intolerant gluten_intolerant gluten-intolerant gluten-free gluten_free epileptic "
    "asthmatic blind deaf hard_of_hearing pregnant disabled paralyzed paraplegic quadriplegic "
    "in_a_wheelchair autistic dyslexic colorblind color_blind colour_blind sober in_recovery "
    "a_recovering_alcoholic kosher halal on_dialysis on_medication immunocompromised "
    "a_vegetarian a_vegan a_pescatarian a_diabetic an_epileptic a_celiac "
    "allergic_to intolerant_to sensitive_to teetotal a_teetotaler"
)
DIET_ES = alternation(
    "vegetariano vegetariana vegano vegana celiaco celiaca diabetico diabetica intolerante "
    "pescetariano pescetariana ciego ciega sordo sorda epileptico epileptica asmatico asmatica "
    "alergico alergica hipertenso hipertensa"
)
HEALTH_ES = alternation(
    "diabetes asma celiaquia epilepsia ansiedad depresion hipertension migranas migrana "
    "artritis tdah autismo cancer una_discapacidad alergia_a alergia intolerancia_a "
    "intolerancia"
)
FAMILY_EN = alternation(
    "kid kids child children son sons daughter daughters brother brothers sister sisters "
    "sibling siblings husband wife boyfriend girlfriend partner fiance fiancee twins triplets "
    "grandchildren grandkids grandson grandsons granddaughter granddaughters cousin cousins "
    "nephew nephews niece nieces stepson stepdaughter step-son step-daughter stepbrother "
    "stepsister baby babies toddler toddlers teenager teenagers teens family parents mom mum "
    "dad mother father grandparents grandma grandmother grandpa grandfather aunt uncle spouse "
    "newborn boys girls boy girl stepmom stepdad stepmother stepfather in-laws "
    "mother-in-law father-in-law sister-in-law brother-in-law bf gf hubby ex ex-wife "
    "ex-husband ex-boyfriend ex-girlfriend"
)
FAMILY_ES = alternation(
    "hijo hija hijos hijas hermano hermana hermanos hermanas esposo esposa marido mujer pareja "
    "novio novia madre padre mama papa padres abuelo abuela abuelos nieto nieta nietos nietas "
    "tio tia tios primo prima primos primas sobrino sobrina sobrinos sobrinas suegro suegra "
    "suegros familia bebe gemelos gemelas mellizos hijastro hijastra"
)
PETS_EN = alternation(
    "dog dogs cat cats puppy puppies kitten kittens kitty pet pets fish goldfish hamster "
    "hamsters rabbit rabbits bunny bunnies bird birds parrot parrots horse horses snake snakes "
    "turtle turtles lizard lizards guinea_pig guinea_pigs ferret ferrets chicken chickens goat "
    "goats cow cows pig pigs pony ponies lab labs labrador golden_retriever poodle pug beagle "
    "corgi husky chihuahua german_shepherd dachshund terrier bulldog gecko tortoise rat rats "
    "mice hedgehog iguana cockatiel canary budgie sheep alpaca llama donkey doggo pup pups "
    "cockatoo tarantula spider frog"
)
PETS_ES = alternation(
    "perro perra perros perras gato gata gatos gatas mascota mascotas pez peces hamster conejo "
    "conejos pajaro pajaros loro loros caballo caballos tortuga tortugas cachorro cachorros "
    "periquito periquitos serpiente gallinas cobaya"
)
NUMBER_EN = alternation(
    "a an one two three four five six seven eight nine ten eleven twelve several many some "
    "a_few a_couple_of a_couple lots_of a_lot_of no twin identical_twin two_little three_little"
)
NUMBER_ES = alternation(
    "un una dos tres cuatro cinco seis siete ocho nueve diez varios varias muchos muchas "
    "unos unas algunos algunas"
)
# Capitalised words after "I'm" that are not first names: "I'm Canadian".
NOT_NAMES = words(
    "american canadian british english french german spanish italian mexican chinese japanese "
    "korean indian irish scottish welsh australian brazilian russian dutch swedish norwegian "
    "danish finnish polish greek turkish african asian european latino latina hispanic jewish "
    "catholic christian muslim hindu buddhist atheist mormon portuguese argentinian colombian "
    "peruvian chilean cuban filipino vietnamese thai egyptian nigerian kenyan texan "
    "californian new not here back fine good ok okay sorry user glad happy sure so very just still "
    "also really actually gay straight single married"
)
